#!/usr/bin/env bash
# tests/e2e/scheduler_preemption_test.sh: preemption (issue 31), each case run under the real
# kube-scheduler (the reference, which validates the case) and then under tarema-scheduler, on
# two 4-core kwok nodes of this test's own (a taint and a label only its pods carry; each
# scheduler its own pair and namespace, so that both run their cases at the same time):
#   a. a high-priority pod on a full cluster evicts the lowest-priority pods only (not the
#      middle-priority ones on the other node), gets status.nominatedNodeName, and lands there;
#   b. preemptionPolicy: Never: the pod waits Pending and nothing is evicted;
#   c. a PodDisruptionBudget steers the choice: the node whose victims are cheaper but
#      protected is passed over for the one whose victims are not;
#   d. while the victims are still Terminating, a lower-priority pod that would fit only on the
#      nominated node (counting the victims, not the nominated pod) does not land there;
#   e. victims get the DisruptionTarget condition (reason PreemptionByScheduler) and a Preempted
#      event naming the preemptor (checked on case a's victims);
#   f. the scheduler restarted in the middle of a preemption: no second eviction, the preemptor
#      still lands once its victims are gone.
# The filler pods (the victims) are bound by spec.nodeName and carry a finalizer of this test, so
# a victim stays Terminating until the test removes it: every "is being evicted" state is looked
# at while it holds, never raced. No fixed sleeps: every wait is on a condition.
# The two schedulers' cases run side by side (one after the other they took some 40 s more): each
# side in a subshell of its own, on its own two nodes (label tarema.io/e2e-preempt=ID-k or ID-t:
# its pending pods select them, so neither scheduler ever looks at the other's) and in its own
# namespace; each side's output is shown and counted once both ended.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): restarts kube-scheduler mid-test
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin preempt sp
KS_STARTED=
HOLD=tarema.io/e2e-hold
release_all() { # strips this test's finalizer from every pod of NS
  local p
  for p in $(kubectl get pods -n "$NS" -o name 2>/dev/null); do
    kubectl patch -n "$NS" "$p" --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null 2>&1
  done
  return 0
}
extra_cleanup() {
  release_all
  if [ -n "${NS_T:-}" ]; then # the tarema side's namespace (created after the trap was set)
    NS=$NS_T release_all
    kubectl delete namespace "$NS_T" --wait=false >/dev/null 2>&1
  fi
  # the tarema side's schedulers, were this test stopped while that subshell ran
  [ -s "$WORK/tarema.pids" ] && xargs -r kill <"$WORK/tarema.pids" 2>/dev/null
  kubectl delete priorityclass "$ID-low" "$ID-mid" "$ID-high" "$ID-never" --wait=false >/dev/null 2>&1
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  return 0
}
command -v jq >/dev/null || { fail "jq in PATH"; summary; exit 1; }
sched_e2e_namespace
NS_K=$NS
NS_T=$NS-t
NS=$NS_T sched_e2e_namespace
ks_start_if_stopped

cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}k, count: 2, cpu: 4, memory: 8Gi, pods: 110,
     labels: {tarema.io/e2e-preempt: "$ID-k"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}t, count: 2, cpu: 4, memory: 8Gi, pods: 110,
     labels: {tarema.io/e2e-preempt: "$ID-t"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "two 4-core nodes per scheduler created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
node_n() { kubectl get nodes -l "tarema.io/e2e-preempt=$1" -o name | sed 's|node/||' | sort | sed -n "$2p"; }
NK1=$(node_n "$ID-k" 1) NK2=$(node_n "$ID-k" 2) NT1=$(node_n "$ID-t" 1) NT2=$(node_n "$ID-t" 2)
[ -n "$NK1" ] && [ -n "$NK2" ] && [ -n "$NT1" ] && [ -n "$NT2" ] ||
  { fail "the test's four nodes listed" "got '$NK1' '$NK2' '$NT1' '$NT2'"; summary; exit 1; }

pc() { # NAME VALUE [POLICY]
  kubectl create -f - >/dev/null <<EOF
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $1}
value: $2
preemptionPolicy: ${3:-PreemptLowerPriority}
EOF
}
check "priority classes low 100, mid 500, high 1000, never 1000 (preemptionPolicy Never)" \
  bash -c "$(declare -f pc); NS=$NS; pc $ID-low 100 && pc $ID-mid 500 && pc $ID-high 1000 && pc $ID-never 1000 Never"

KS=default-scheduler
# filler NAME NODE CLASS CPU [LABELS_JSON]: a pod bound to NODE (no scheduler involved) with the
# test's finalizer: a victim stays Terminating until released.
filler() {
  pod_json "$NS" "$1" "$KS" "$4" 64Mi '{}' "$ID" |
    jq -c --arg node "$2" --arg pc "$ID-$3" --arg hold "$HOLD" --argjson labels "${5:-{\}}" '
      .spec.nodeName = $node | .spec.priorityClassName = $pc | .metadata.finalizers = [$hold]
      | .metadata.labels = $labels' |
    kubectl create -f - >/dev/null
}
# pending_pod NAME SCHEDULER CLASS CPU: a pod for SCHEDULER, on this side's two nodes only (SEL).
pending_pod() {
  pod_json "$NS" "$1" "$2" "$4" 64Mi '{}' "$ID" |
    jq -c --arg id "$SEL" --arg pc "$ID-$3" '
      .spec.priorityClassName = $pc | .spec.nodeSelector = {"tarema.io/e2e-preempt": $id}' |
    kubectl create -f - >/dev/null
}
# ks_metric NAME: a series of kube-scheduler's /metrics (its secure port, self-signed; the admin client
# certificate); nothing and status 1 when the scrape fails.
ks_metric() {
  local m
  . "$TAREMA_CLUSTER_DIR/ports.env"
  m=$(read_ok curl -sf --max-time 5 -k \
    --cert "$TAREMA_CLUSTER_DIR/pki/admin.crt" --key "$TAREMA_CLUSTER_DIR/pki/admin.key" \
    "https://127.0.0.1:$SCHEDULER_PORT/metrics") || return 1
  awk -v m="$1" '$1 == m {printf "%d", $2; found=1} END {if (!found) print 0}' <<<"$m"
}
nominated() { kubectl get pod -n "$NS" "$1" -o jsonpath='{.status.nominatedNodeName}' 2>/dev/null; }
nominated_to() { [ "$(nominated "$1")" = "$2" ]; }
bound_to() { [ "$(pod_node "$NS" "$1")" = "$2" ]; }
# terminating: the names of the pods of NS being deleted, sorted, one line.
terminating() {
  read_jq '[.items[] | select(.metadata.deletionTimestamp != null) | .metadata.name] | sort | join(" ")' \
    kubectl get pods -n "$NS" -o json
}
terminating_is() { [ "$(terminating)" = "$1" ]; }
release() { # NAMES...: the finalizer removed, and the pods gone
  local p
  for p in "$@"; do
    kubectl patch -n "$NS" pod "$p" --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null 2>&1
  done
  wait_for 60 gone "$@"
}
gone() { local p; for p in "$@"; do kubectl get pod -n "$NS" "$p" >/dev/null 2>&1 && return 1; done; return 0; }
no_pods() { [ "$(kubectl get pods -n "$NS" -o name 2>/dev/null | wc -l)" = 0 ]; }
# clear_case: every pod of NS released and deleted (the next case starts on empty nodes).
clear_case() {
  release_all
  kubectl delete pods -n "$NS" --all --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_for 60 no_pods || fail "pods of the case deleted" "$(kubectl get pods -n "$NS" 2>&1 | tail -n +2)"
}
failed_count() { # POD: FailedScheduling events about POD
  read_jqa --arg p "$1" '[.items[] | select(.reason == "FailedScheduling" and .regarding.name == $p)] | length' \
    kubectl get events.events.k8s.io -n "$NS" -o json
}
failed_more_than() { local c; c=$(failed_count "$1") && [ "$c" -gt "$2" ]; }
state() { kubectl get pods -n "$NS" -o wide 2>&1 | tail -n +2 | awk '{print $1, $3, $7}' | tr '\n' ';'; }
# read_jqa [--arg NAME VALUE]... FILTER COMMAND...: lib.sh's read_jq with jq --arg arguments.
read_jqa() {
  local args=()
  while [ "${1:-}" = --arg ]; do args+=("$1" "$2" "$3"); shift 3; done
  local filter=$1 out
  shift
  out=$(read_ok "$@") || return 1
  jq -r "${args[@]}" "$filter" <<<"$out"
}
# victim_marked POD SCHEDULER: DisruptionTarget=True reason PreemptionByScheduler on its status,
# in kube-scheduler's words ("<scheduler>: preempting to accommodate a higher priority pod"),
# with observedGeneration 1: the generation the victim had when it was marked (kube-scheduler
# 1.35 writes it: PodObservedGenerationTracking is GA). A filler is created and never changed,
# so that is 1; its deletion bumps metadata.generation to 2 afterwards, hence not compared.
victim_marked() {
  kubectl get pod -n "$NS" "$1" -o json |
    jq -e --arg m "$2: preempting to accommodate a higher priority pod" '[.status.conditions[]? | select(.type == "DisruptionTarget" and .status == "True" and .reason == "PreemptionByScheduler" and .message == $m and .observedGeneration == 1)] | length == 1' >/dev/null
}
# unschedulable_marked POD: PodScheduled=False reason Unschedulable, observedGeneration the
# pod's metadata.generation (as kube-scheduler 1.35 writes it).
unschedulable_marked() {
  kubectl get pod -n "$NS" "$1" -o json |
    jq -e '.metadata.generation as $g | [.status.conditions[]? | select(.type == "PodScheduled" and .status == "False" and .reason == "Unschedulable" and .observedGeneration == $g)] | length == 1' >/dev/null
}
# preempted_event VICTIM PREEMPTOR NODE [RELATED]: a Preempted event about VICTIM, "Preempted by
# pod <uid> on node <node>", related to PREEMPTOR unless RELATED is "optional". kube-scheduler
# 1.37.2 sends it without `related` (measured here: the note is 1.35's, the related object is
# absent; 1.37's executor passes its preemptor wrapper, not the Pod, as the related object);
# tarema always relates it, as 1.35 does.
preempted_event() {
  local uid
  uid=$(kubectl get pod -n "$NS" "$2" -o jsonpath='{.metadata.uid}') || return 1
  kubectl get events.events.k8s.io -n "$NS" -o json |
    jq -e --arg v "$1" --arg p "$2" --arg note "Preempted by pod $uid on node $3" --arg rel "${4:-required}" '
      [.items[] | select(.reason == "Preempted" and .regarding.name == $v and .type == "Normal"
                         and (.related.name == $p or ($rel == "optional" and .related == null))
                         and .note == $note)] | length >= 1' >/dev/null
}
# The server's minor version: what the reference kube-scheduler of this cluster does differs.
K8S_MINOR=$(kubectl version -o json 2>/dev/null | jq -r '.serverVersion.minor // "0"' | tr -dc '0-9')

run_cases() { # WHO SCHEDULER PREFIX
  local who=$1 s=$2 x=$3 uid rel
  # tried: the scheduler's preemption attempts so far (scheduler_preemption_attempts_total,
  # kube-scheduler's metric, which tarema serves too; see case b)
  tried() {
    if [ "$s" = "$KS" ]; then
      ks_metric scheduler_preemption_attempts_total
    else
      metric_sum "$SCHED_PORT" '^scheduler_preemption_attempts_total$'
    fi
  }
  tried_more_than() { local c; c=$(tried "$1") && [ "$c" -gt "$2" ]; }

  # ---- a + e: lowest priority only; nominatedNodeName; DisruptionTarget and Preempted ----------
  # N1: two low and two mid pods of 1 cpu; N2: four mid. A 2-cpu high pod: on N1 the two low
  # pods are enough (the mids are reprieved), on N2 it would take two mids: N1 it is.
  filler "${x}a-l1" "$N1" low 1
  filler "${x}a-l2" "$N1" low 1
  filler "${x}a-m1" "$N1" mid 1
  filler "${x}a-m2" "$N1" mid 1
  for i in 3 4 5 6; do filler "${x}a-m$i" "$N2" mid 1; done
  pending_pod "${x}a-p" "$s" high 2
  if wait_for 60 nominated_to "${x}a-p" "$N1"; then
    pass "$who: a. the high-priority pod gets status.nominatedNodeName $N1"
  else
    fail "$who: a. the high-priority pod gets status.nominatedNodeName $N1" "nominated '$(nominated "${x}a-p")'; $(state); events: $(notes "${x}a-p")"
  fi
  if wait_for 30 terminating_is "${x}a-l1 ${x}a-l2"; then
    pass "$who: a. exactly the two lowest-priority pods are evicted"
  else
    fail "$who: a. exactly the two lowest-priority pods are evicted" "terminating: '$(terminating)'"
  fi
  for v in "${x}a-l1" "${x}a-l2"; do
    if wait_for 30 victim_marked "$v" "$s"; then
      pass "$who: e. victim $v has DisruptionTarget=True reason PreemptionByScheduler, observedGeneration 1"
    else
      fail "$who: e. victim $v has DisruptionTarget=True reason PreemptionByScheduler, observedGeneration 1" \
        "$(kubectl get pod -n "$NS" "$v" -o jsonpath='{.status.conditions}')"
    fi
    rel=required
    [ "$s" = "$KS" ] && [ "${K8S_MINOR:-0}" -ge 37 ] && rel=optional
    if wait_for 30 preempted_event "$v" "${x}a-p" "$N1" "$rel"; then
      pass "$who: e. victim $v has a Preempted event$([ $rel = required ] && echo ' related to the preemptor')"
    else
      fail "$who: e. victim $v has a Preempted event$([ $rel = required ] && echo ' related to the preemptor')" "$(notes "$v")"
    fi
  done
  uid=$(kubectl get pod -n "$NS" "${x}a-p" -o jsonpath='{.metadata.uid}')
  if bound_to "${x}a-p" "" && [ -n "$uid" ]; then
    pass "$who: a. the preemptor waits while its victims are Terminating"
  else
    fail "$who: a. the preemptor waits while its victims are Terminating" "bound to '$(pod_node "$NS" "${x}a-p")'"
  fi
  release "${x}a-l1" "${x}a-l2"
  if wait_for 60 bound_to "${x}a-p" "$N1"; then
    pass "$who: a. the preemptor lands on $N1 once its victims are gone"
  else
    fail "$who: a. the preemptor lands on $N1 once its victims are gone" "$(state); events: $(notes "${x}a-p")"
  fi
  if [ "$(terminating)" = "" ] && [ "$(kubectl get pods -n "$NS" -o name | wc -l)" = 7 ]; then
    pass "$who: a. the mid-priority pods are untouched"
  else
    fail "$who: a. the mid-priority pods are untouched" "$(state)"
  fi
  clear_case

  # ---- b: preemptionPolicy Never --------------------------------------------------------------
  for i in 1 2 3 4; do filler "${x}b-l$i" "$N1" low 1; filler "${x}b-k$i" "$N2" low 1; done
  pending_pod "${x}b-p" "$s" never 2
  if wait_for 60 failed_more_than "${x}b-p" 0 && [ -z "$(pod_node "$NS" "${x}b-p")" ] &&
    [ -z "$(nominated "${x}b-p")" ] && terminating_is ""; then
    pass "$who: b. preemptionPolicy Never: Pending, not nominated, nothing evicted"
  else
    fail "$who: b. preemptionPolicy Never: Pending, not nominated, nothing evicted" "$(state); nominated '$(nominated "${x}b-p")'; events: $(notes "${x}b-p")"
  fi
  if wait_for 30 unschedulable_marked "${x}b-p"; then
    pass "$who: b. PodScheduled False, Unschedulable, observedGeneration = metadata.generation"
  else
    fail "$who: b. PodScheduled False, Unschedulable, observedGeneration = metadata.generation" \
      "$(kubectl get pod -n "$NS" "${x}b-p" -o json | jq -c '{g: .metadata.generation, c: .status.conditions}')"
  fi
  # a second attempt (a pod deleted on N1 requeues it; 1 cpu free is still too little) evicts
  # nothing either. Both schedulers fold an unchanged FailedScheduling (kube-scheduler into an
  # event series updated later), so the attempt is seen in the preemption metric.
  n=$(tried "${x}b-p")
  kubectl delete pod -n "$NS" "${x}b-l4" --wait=false >/dev/null 2>&1
  release "${x}b-l4"
  if wait_for 60 tried_more_than "${x}b-p" "${n:-0}" && terminating_is "" && [ -z "$(nominated "${x}b-p")" ]; then
    pass "$who: b. retried after a cluster change: still nothing evicted"
  else
    fail "$who: b. retried after a cluster change: still nothing evicted" "$(state); events: $(notes "${x}b-p")"
  fi
  clear_case

  # ---- c: a PodDisruptionBudget steers the choice of victims ------------------------------------
  # N1: four low pods app=guarded (a PDB minAvailable 4); N2: four mid pods. Without the PDB, N1
  # (lower-priority victims) would be chosen; with it, N2.
  for i in 1 2 3 4; do
    filler "${x}c-g$i" "$N1" low 1 '{"app": "guarded"}'
    filler "${x}c-m$i" "$N2" mid 1 '{"app": "free"}'
  done
  kubectl create -f - >/dev/null <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: ${x}guard, namespace: $NS}
spec:
  minAvailable: 4
  selector: {matchLabels: {app: guarded}}
EOF
  pdb_settled() {
    kubectl get pdb -n "$NS" "${x}guard" -o json |
      jq -e '.status.currentHealthy == 4 and .status.disruptionsAllowed == 0' >/dev/null
  }
  if wait_for 60 pdb_settled; then
    pass "$who: c. PDB minAvailable 4 over the four guarded pods: 0 disruptions allowed"
  else
    fail "$who: c. PDB minAvailable 4 over the four guarded pods: 0 disruptions allowed" "$(kubectl get pdb -n "$NS" "${x}guard" -o jsonpath='{.status}')"
  fi
  pending_pod "${x}c-p" "$s" high 2
  two_mids() { [ "$(terminating | wc -w)" = 2 ] && [[ "$(terminating)" == "${x}c-m"*" ${x}c-m"* ]]; }
  if wait_for 60 nominated_to "${x}c-p" "$N2" && wait_for 30 two_mids; then
    pass "$who: c. the PDB steers preemption to $N2: two mid pods evicted, no guarded pod"
  else
    fail "$who: c. the PDB steers preemption to $N2: two mid pods evicted, no guarded pod" "nominated '$(nominated "${x}c-p")'; terminating '$(terminating)'"
  fi
  # shellcheck disable=SC2046
  release $(terminating)
  if wait_for 60 bound_to "${x}c-p" "$N2"; then
    pass "$who: c. the preemptor lands on $N2"
  else
    fail "$who: c. the preemptor lands on $N2" "$(state); events: $(notes "${x}c-p")"
  fi
  kubectl delete pdb -n "$NS" "${x}guard" >/dev/null 2>&1
  clear_case

  # ---- d: the nominated node is kept for the preemptor -------------------------------------------
  # N1: one low pod of 3 cpu (1 free); N2: four mid pods. The 2-cpu high pod evicts the low pod
  # on N1. While it is Terminating, a 1-cpu low pod fits N1 by what is placed there (3 + 1) but
  # not beside the nominated pod (3 + 2 + 1): it must wait.
  filler "${x}d-v" "$N1" low 3
  for i in 1 2 3 4; do filler "${x}d-m$i" "$N2" mid 1; done
  pending_pod "${x}d-p" "$s" high 2
  if wait_for 60 nominated_to "${x}d-p" "$N1" && wait_for 30 terminating_is "${x}d-v"; then
    pass "$who: d. the high pod is nominated to $N1, its victim Terminating"
  else
    fail "$who: d. the high pod is nominated to $N1, its victim Terminating" "nominated '$(nominated "${x}d-p")'; terminating '$(terminating)'"
  fi
  pending_pod "${x}d-low" "$s" low 1
  if wait_for 60 failed_more_than "${x}d-low" 0 && [ -z "$(pod_node "$NS" "${x}d-low")" ]; then
    pass "$who: d. a lower-priority pod does not take the nominated room on $N1"
  else
    fail "$who: d. a lower-priority pod does not take the nominated room on $N1" "$(state); events: $(notes "${x}d-low")"
  fi
  release "${x}d-v"
  if wait_for 60 bound_to "${x}d-p" "$N1" && wait_for 60 bound_to "${x}d-low" "$N1"; then
    pass "$who: d. victim gone: the preemptor lands on $N1, then the low pod beside it"
  else
    fail "$who: d. victim gone: the preemptor lands on $N1, then the low pod beside it" "$(state)"
  fi
  clear_case

  # ---- f: restart in the middle of a preemption ---------------------------------------------------
  filler "${x}f-l1" "$N1" low 1
  filler "${x}f-l2" "$N1" low 1
  filler "${x}f-m1" "$N1" mid 1
  filler "${x}f-m2" "$N1" mid 1
  for i in 3 4 5 6; do filler "${x}f-m$i" "$N2" mid 1; done
  pending_pod "${x}f-p" "$s" high 2
  if wait_for 60 nominated_to "${x}f-p" "$N1" && wait_for 30 terminating_is "${x}f-l1 ${x}f-l2"; then
    pass "$who: f. preemption under way (nominated $N1, two victims Terminating)"
  else
    fail "$who: f. preemption under way (nominated $N1, two victims Terminating)" "nominated '$(nominated "${x}f-p")'; terminating '$(terminating)'"
  fi
  n=$(failed_count "${x}f-p")
  if [ "$who" = tarema ]; then
    kill "$SCHED_PID" 2>/dev/null
    wait "$SCHED_PID" 2>/dev/null
    start_scheduler_recorded "$WORK/sched-f.log" --scheduler-name "$SCHED" --policy tarema
  else
    bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
    bash "$REPO_ROOT/hack/cluster.sh" scheduler start >>"$WORK/ks.log" 2>&1
  fi
  # the restarted scheduler has tried the preemptor again (a new FailedScheduling event)
  if wait_for 90 failed_more_than "${x}f-p" "${n:-0}" && terminating_is "${x}f-l1 ${x}f-l2" &&
    nominated_to "${x}f-p" "$N1"; then
    pass "$who: f. restarted: the preemptor tried again, no second eviction, still nominated"
  else
    fail "$who: f. restarted: the preemptor tried again, no second eviction, still nominated" "terminating '$(terminating)'; nominated '$(nominated "${x}f-p")'; events: $(notes "${x}f-p")"
  fi
  release "${x}f-l1" "${x}f-l2"
  if wait_for 60 bound_to "${x}f-p" "$N1" && terminating_is ""; then
    pass "$who: f. the preemptor lands on $N1 after the restart, nothing else evicted"
  else
    fail "$who: f. the preemptor lands on $N1 after the restart, nothing else evicted" "$(state)"
  fi
  clear_case
}

# side WHO NS SEL N1 N2 OUT COMMAND...: COMMAND (which runs the cases) in a subshell in the
# background with this side's namespace, node label and nodes, its output to OUT, ended by a
# line that says it got to the end (a side that dies half-way is a failure, not fewer checks).
side() {
  local who=$1 ns=$2 sel=$3 n1=$4 n2=$5 out=$6
  shift 6
  (NS=$ns SEL=$sel N1=$n1 N2=$n2 t0=$SECONDS; "$@"; echo "# side $who: done in $((SECONDS - t0)) s") >"$out" 2>&1 &
}
# tally WHO OUT: shows a side's output and counts its ok / not ok lines into this test's.
tally() {
  cat "$2"
  E2E_PASSED=$((E2E_PASSED + $(grep -c '^ok - ' "$2")))
  E2E_FAILED=$((E2E_FAILED + $(grep -c '^not ok - ' "$2")))
  grep -qE "^# side $1: done in [0-9]+ s$" "$2" || fail "$1: every case ran (the side ended early)" "$(tail -n 5 "$2")"
}
# start_scheduler_recorded LOG ARGS...: start_scheduler, its pid also in tarema.pids (for
# extra_cleanup, should the test be stopped while the tarema side runs).
start_scheduler_recorded() { start_scheduler "$@" && echo "$SCHED_PID" >>"$WORK/tarema.pids"; }
tarema_side() {
  sched_e2e_start --policy tarema # on failure it ends this subshell before the "done" line
  echo "$SCHED_PID" >>"$WORK/tarema.pids"
  run_cases tarema "$SCHED" t
  stop_schedulers # this subshell's: the first one and the one restarted in case f
  rm -f "$WORK/tarema.pids"
}

# PREEMPT_E2E_ONLY=kube or tarema runs one side only (while working on one of them).
WHO=${PREEMPT_E2E_ONLY:-both}
sides=()
if [ "$WHO" != tarema ]; then
  side kube "$NS_K" "$ID-k" "$NK1" "$NK2" "$WORK/side-kube.out" run_cases "kube-scheduler (reference)" "$KS" k
  sides+=(kube)
fi
if [ "$WHO" != kube ]; then
  side tarema "$NS_T" "$ID-t" "$NT1" "$NT2" "$WORK/side-tarema.out" tarema_side
  sides+=(tarema)
fi
wait # both sides (nothing else runs in the background here)
for w in "${sides[@]}"; do tally "$w" "$WORK/side-$w.out"; done

out=$(check_fit)
if [ $? = 0 ] && [ -z "$out" ]; then pass "every node's pods fit it"; else fail "every node's pods fit it" "$out"; fi
summary
