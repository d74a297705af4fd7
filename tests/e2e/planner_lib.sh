#!/usr/bin/env bash
# planner_lib.sh: shared set-up of the planner controller's e2e tests (sourced after lib.sh).
# Installs the chart's Workflow, PodGroup and Reservation CRDs (charts/tarema/crds: the real
# ones, never stand-ins, so the controller's objects are checked against the schemas that ship).
# Starts and stops `tarema-planner run` (planner_start, planner_stop) with a short slot.

PL="$BIN/tarema-planner"
PL_LOG_DIR=${PL_LOG_DIR:-$(mktemp -d)}
PL_PID=""

planner_crds() {
  local f
  for f in tarema.io_workflows.yaml scheduling.x-k8s.io_podgroups.yaml tarema.io_reservations.yaml; do
    apply_shared -f "$REPO_ROOT/charts/tarema/crds/$f" || return 1
  done
  kubectl wait --for condition=established --timeout=30s \
    crd/workflows.tarema.io crd/podgroups.scheduling.x-k8s.io crd/reservations.tarema.io >/dev/null
}

# planner_start [FLAGS...]: the controller with 1 s slots and ticks, kube-scheduler's name (which
# admits no Reservation: --require-admission false; later flags win).
planner_start() {
  "$PL" run --slot 1s --tick 1s --time-limit 2s --scheduler-name default-scheduler \
    --namespace "$NS" --node-selector "$PL_SEL" --lease-namespace "$NS" --require-admission false \
    --identity "e2e-$$-$RANDOM" "$@" >>"$PL_LOG_DIR/planner.log" 2>&1 &
  PL_PID=$!
}

planner_stop() {
  [ -n "$PL_PID" ] && kill "$PL_PID" 2>/dev/null && wait "$PL_PID" 2>/dev/null
  PL_PID=""
}

# wf_field NAME JSONPATH: one field of a Workflow
wf_field() { kubectl get workflow "$1" -o jsonpath="{$2}" 2>/dev/null; }

# planner_setup: own namespace, 4 own nodes (4 cores, 8Gi; label planner-e2e=ID, the
# controller's --node-selector), the CRDs, and kube-scheduler to bind the ungated pods (the one
# of this cluster when it already runs, else started here and stopped by planner_cleanup).
PL_ID=${PL_ID:-$$}
NS=planner-e2e-$PL_ID
PL_PREFIX=pl$PL_ID
PL_SEL=planner-e2e=$PL_ID
PL_STARTED_KS=0
planner_setup() {
  command -v kubectl >/dev/null || { echo "kubectl not in PATH: eval hack/cluster.sh env"; return 1; }
  planner_crds || { echo "CRDs could not be installed"; return 1; }
  kubectl create namespace "$NS" >/dev/null || return 1
  cat >"$PL_LOG_DIR/nodes.yaml" <<Y
nodes:
  - {prefix: $PL_PREFIX, count: 4, cpu: 4, memory: 8Gi, pods: 20, labels: {planner-e2e: "$PL_ID"}}
Y
  bash "$REPO_ROOT/hack/cluster.sh" nodes "$PL_LOG_DIR/nodes.yaml" >/dev/null || return 1
  if ! bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep -E '^ +scheduler +running'; then
    bash "$REPO_ROOT/hack/cluster.sh" scheduler start >/dev/null 2>&1 || return 1
    PL_STARTED_KS=1
    : >"$PL_LOG_DIR/started-kube-scheduler" # the tests call planner_setup in $(...): a subshell
  fi
}

planner_cleanup() {
  planner_stop
  if [ "$PL_STARTED_KS" = 1 ] || [ -e "$PL_LOG_DIR/started-kube-scheduler" ]; then
    bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  fi
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl get nodes -o name 2>/dev/null | grep "^node/$PL_PREFIX-" | xargs -r kubectl delete --wait=false >/dev/null 2>&1 || true
  rm -rf "$PL_LOG_DIR"
}

# kwf NAME JSONPATH: one field of a Workflow of the test's namespace
kwf() { kubectl -n "$NS" get workflow "$1" -o jsonpath="{$2}" 2>/dev/null; }
# wf_phase_is NAME PHASE
wf_phase_is() { [ "$(kwf "$1" .status.phase)" = "$2" ]; }
# step_state_is NAME STEP STATE
step_state_is() { [ "$(kwf "$1" "$(printf '.status.steps[?(@.name=="%s")].state' "$2")")" = "$3" ]; }
# nobj KIND SELECTOR: how many objects of KIND in the namespace match the label selector
# (count_lines: nothing and status 1 when the list fails, never "0 objects")
nobj() { count_lines kubectl -n "$NS" get "$1" -l "$2" -o name; }
# pod_phase_is POD PHASE: the pod of the namespace is in that phase
pod_phase_is() { [ "$(kubectl -n "$NS" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = "$2" ]; }
# gated_pods WORKFLOW: how many of its pods still carry the planner's gate
gated_pods() {
  kubectl -n "$NS" get pods -l "planner.tarema.io/workflow=$1" -o json |
    python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["items"] if any(g["name"]=="tarema.io/planned" for g in p["spec"].get("schedulingGates") or [])))'
}
# wf_json NAME: the Workflow as JSON (for python checks)
wf_json() { kubectl -n "$NS" get workflow "$1" -o json; }

# planner_e2e_begin [SCHEDULER_NAME]: the start the planner e2e tests share: W (the log dir),
# planner_setup, an EXIT trap that cleans up (planner_cleanup; with a name also
# stop_schedulers), NS, PL and the workflow helpers exported for `check bash -c`, and with a
# name a tarema-scheduler of that name for NS in SCHED (scheduler_lib.sh must be sourced). A part
# that does not come up fails the test and ends it.
planner_e2e_begin() {
  W=$PL_LOG_DIR
  SCHED=${1:-}
  if [ -n "$SCHED" ]; then trap 'stop_schedulers; planner_cleanup' EXIT; else trap planner_cleanup EXIT; fi
  local out
  if ! out=$(planner_setup 2>&1); then
    fail "set-up: namespace, nodes, CRDs, kube-scheduler" "$out"
    summary
    exit 1
  fi
  export NS PL
  export -f kwf wf_phase_is step_state_is gated_pods wf_json wait_for pod_phase_is nobj
  if [ -n "$SCHED" ] && ! start_scheduler "$W/sched.log" --scheduler-name "$SCHED" --namespaces "$NS"; then
    fail "tarema-scheduler starts" "$(tail -n 5 "$W/sched.log")"
    summary
    exit 1
  fi
}
