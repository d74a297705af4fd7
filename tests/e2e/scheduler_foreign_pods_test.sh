#!/usr/bin/env bash
# tests/e2e/scheduler_foreign_pods_test.sh: every pod in the cluster counts, whoever placed it
# and whenever (issue 30). On two 8-core kwok nodes of its own, pods placed by the real
# kube-scheduler (as a DaemonSet's or any other workload's would be) constrain what
# tarema-scheduler --policy tarema may do, and each case is run under kube-scheduler too, the
# reference (same pods, another name):
#   1. hostPort 9100 taken on every node by kube-scheduler's pods: a new pod with that host
#      port stays Pending (FailedScheduling: no free ports);
#   2. kube-scheduler's pods carry required anti-affinity against app=y: a new app=y pod stays
#      Pending (existing pods' anti-affinity);
#   3. a new pod with required anti-affinity to app=x, app=x on every node: Pending;
#   4. a new pod with required affinity (hostname) to an app=solo pod kube-scheduler placed:
#      bound to that pod's node;
#   5. anti-affinity app=r (hostname) for three pods on two nodes, tarema-scheduler restarted
#      after the first is bound: two bound on different nodes, the third Pending;
#   6. pods whose pod-level requests (spec.resources) are larger than their containers': counted
#      at the pod level; a pod with a DRA resource claim: Pending (tarema allocates none).
# A pod left Pending is checked only once its scheduler has reported it (a FailedScheduling
# event with the expected reason), never after a fixed wait.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin foreign sf
KS_STARTED=
extra_cleanup() {
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  return 0
}
command -v jq >/dev/null || { fail "jq in PATH"; summary; exit 1; }
sched_e2e_namespace
kube_scheduler_up

# Two 8-core nodes that only this test's pods use (taint, and a label every pod selects).
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}n, count: 2, cpu: 8, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e-foreign: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "two 8-core nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start --policy tarema

KS=default-scheduler
# pod NAME SCHEDULER LABELS_JSON [JQ_FILTER]: creates a pod (100m, 64Mi) for SCHEDULER on this
# test's nodes, with LABELS_JSON, the spec changed by JQ_FILTER.
pod() {
  pod_json "$NS" "$1" "$2" 100m 64Mi '{}' "$ID" |
    jq -c --arg id "$ID" --argjson labels "$3" "
      .metadata.labels = \$labels | .spec.nodeSelector = {\"tarema.io/e2e-foreign\": \$id}
      | ${4:-.}" |
    kubectl create -f - >/dev/null
}
HOSTPORT='.spec.containers[0].ports = [{containerPort: 9100, hostPort: 9100}]'
# required (anti-)affinity terms on app=VALUE, topology kubernetes.io/hostname
term() { jq -cn --arg v "$1" '{labelSelector: {matchLabels: {app: $v}}, topologyKey: "kubernetes.io/hostname"}'; }
anti() { echo ".spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution = [$(term "$1")$([ -n "${2:-}" ] && echo ",$(term "$2")")]"; }
affinity() { echo ".spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution = [$(term "$1")]"; }
bound() { [ -n "$(pod_node "$NS" "$1")" ]; }
all_bound() { local p; for p in "$@"; do bound "$p" || return 1; done; }
# pending WHAT POD ERE: POD gets a FailedScheduling event matching ERE and is still unbound.
pending() {
  if wait_for 60 failed_event "$2" "$3" && ! bound "$2"; then
    pass "$1"
  else
    fail "$1" "node '$(pod_node "$NS" "$2")'; events: $(notes "$2")"
  fi
}
# placed WHAT PODS...: kube-scheduler bound every one of PODS, on two different nodes.
placed() {
  local what=$1
  shift
  if wait_for 60 all_bound "$@" && [ "$(for p in "$@"; do pod_node "$NS" "$p"; echo; done | sort -u | wc -l)" = 2 ]; then
    pass "$what"
  else
    fail "$what" "$(kubectl get pods -n "$NS" -o wide "$@" 2>&1 | tail -n +2)"
  fi
}

# ---- 1. host ports taken by another scheduler's pods -------------------------------------------
pod exporter-1 "$KS" '{"app": "node-exporter"}' "$HOSTPORT"
pod exporter-2 "$KS" '{"app": "node-exporter"}' "$HOSTPORT"
placed "kube-scheduler places two hostPort 9100 pods, one per node" exporter-1 exporter-2
pod t-port "$SCHED" '{"app": "exporter2"}' "$HOSTPORT"
pod k-port "$KS" '{"app": "exporter2"}' "$HOSTPORT"
pending "kube-scheduler (reference): hostPort 9100 taken on every node, Pending" k-port 'free ports'
pending "tarema: hostPort 9100 taken on every node by another scheduler's pods, Pending" t-port \
  'node\(s\) didn.t have free ports'

# ---- 2. another scheduler's pods' anti-affinity against app=y ----------------------------------
pod guard-1 "$KS" '{"app": "guard"}' "$(anti y guard)"
pod guard-2 "$KS" '{"app": "guard"}' "$(anti y guard)"
placed "kube-scheduler places two pods with anti-affinity against app=y, one per node" guard-1 guard-2
pod k-y "$KS" '{"app": "y"}'
pod t-y "$SCHED" '{"app": "y"}'
pending "kube-scheduler (reference): placed pods' anti-affinity against app=y, Pending" k-y 'anti-affinity'
pending "tarema: another scheduler's pods' anti-affinity against app=y, Pending" t-y \
  "didn.t satisfy existing pods anti-affinity rules"

# ---- 3. own anti-affinity to app=x, which runs on every node -----------------------------------
pod x-1 "$KS" '{"app": "x"}' "$(anti x)"
pod x-2 "$KS" '{"app": "x"}' "$(anti x)"
placed "kube-scheduler places app=x on both nodes" x-1 x-2
pod k-antix "$KS" '{"app": "w"}' "$(anti x)"
pod t-antix "$SCHED" '{"app": "w"}' "$(anti x)"
pending "kube-scheduler (reference): anti-affinity to app=x on every node, Pending" k-antix 'anti-affinity'
pending "tarema: anti-affinity to another scheduler's app=x on every node, Pending" t-antix \
  "didn.t match pod anti-affinity rules"

# ---- 4. own affinity to another scheduler's pod ------------------------------------------------
pod solo "$KS" '{"app": "solo"}'
if wait_for 60 bound solo; then pass "kube-scheduler places app=solo"; else fail "kube-scheduler places app=solo" "$(notes solo)"; fi
SOLO=$(pod_node "$NS" solo)
pod k-aff "$KS" '{"app": "v"}' "$(affinity solo)"
pod t-aff "$SCHED" '{"app": "v"}' "$(affinity solo)"
for p in k-aff t-aff; do
  who=tarema
  [ $p = k-aff ] && who="kube-scheduler (reference)"
  if wait_for 60 bound $p && [ "$(pod_node "$NS" $p)" = "$SOLO" ]; then
    pass "$who: affinity to another scheduler's app=solo pod, bound to its node"
  else
    fail "$who: affinity to another scheduler's app=solo pod, bound to its node" "node '$(pod_node "$NS" $p)', want '$SOLO'; events: $(notes $p)"
  fi
done

# ---- 5. anti-affinity among three pods on two nodes, scheduler restarted after the first --------
# kube-scheduler (reference, not restarted): app=q
for q in q1 q2 q3; do pod $q "$KS" '{"app": "q"}' "$(anti q)"; done
two_of_three() { # PREFIX: two bound on different nodes, the third reported
  local bound_pods=() p nodes
  for p in "${1}1" "${1}2" "${1}3"; do bound "$p" && bound_pods+=("$p"); done
  [ ${#bound_pods[@]} = 2 ] || return 1
  nodes=$(for p in "${bound_pods[@]}"; do pod_node "$NS" "$p"; echo; done | sort -u | wc -l)
  [ "$nodes" = 2 ] || return 1
  for p in "${1}1" "${1}2" "${1}3"; do bound "$p" || failed_event "$p" 'anti-affinity' || return 1; done
}
if wait_for 60 two_of_three q; then
  pass "kube-scheduler (reference): three app=q pods with anti-affinity, 2 bound, 1 Pending"
else
  fail "kube-scheduler (reference): three app=q pods with anti-affinity, 2 bound, 1 Pending" "$(kubectl get pods -n "$NS" -o wide q1 q2 q3 2>&1 | tail -n +2)"
fi
pod r1 "$SCHED" '{"app": "r"}' "$(anti r)"
if wait_for 60 bound r1; then pass "tarema binds r1"; else fail "tarema binds r1" "$(notes r1)"; fi
kill "$SCHED_PID" 2>/dev/null
wait "$SCHED_PID" 2>/dev/null
if start_scheduler "$WORK/sched2.log" --scheduler-name "$SCHED" --policy tarema; then
  pass "tarema-scheduler restarted"
else
  fail "tarema-scheduler restarted" "$(tail -n 5 "$WORK/sched2.log")"
fi
pod r2 "$SCHED" '{"app": "r"}' "$(anti r)"
pod r3 "$SCHED" '{"app": "r"}' "$(anti r)"
if wait_for 60 two_of_three r; then
  pass "tarema restarted after r1: three app=r pods with anti-affinity, 2 bound on different nodes, 1 Pending"
else
  fail "tarema restarted after r1: three app=r pods with anti-affinity, 2 bound on different nodes, 1 Pending" \
    "$(kubectl get pods -n "$NS" -o wide r1 r2 r3 2>&1 | tail -n +2)"
fi

# ---- 6. pod-level resources and DRA claims -------------------------------------------------------
# Three pods of 100m in their container but 5 cpu at pod level (PodLevelResources): two fit the
# two 8-core nodes, the third does not. tarema's first, then (deleted) kube-scheduler's.
PODLEVEL='.spec.resources = {requests: {cpu: "5", memory: "64Mi"}}'
two_bound_one_short() { # PREFIX
  local n=0 p
  for p in "${1}1" "${1}2" "${1}3"; do bound "$p" && n=$((n + 1)); done
  [ $n = 2 ] || return 1
  for p in "${1}1" "${1}2" "${1}3"; do bound "$p" || failed_event "$p" 'Insufficient cpu' || return 1; done
}
for who in tarema kube-scheduler; do
  pre=t-pl
  s=$SCHED
  [ $who = kube-scheduler ] && { pre=k-pl; s=$KS; }
  for i in 1 2 3; do pod "$pre$i" "$s" '{"app": "pl"}' "$PODLEVEL"; done
  what="$who: pod-level requests of 5 cpu (containers 100m), three pods on two 8-core nodes: 2 bound, 1 Insufficient cpu"
  [ $who = kube-scheduler ] && what="kube-scheduler (reference): ${what#*: }"
  if wait_for 60 two_bound_one_short "$pre"; then pass "$what"; else fail "$what" "$(kubectl get pods -n "$NS" -o wide "${pre}1" "${pre}2" "${pre}3" 2>&1 | tail -n +2)"; fi
  kubectl delete pod -n "$NS" "${pre}1" "${pre}2" "${pre}3" --grace-period=0 --force --wait=true --timeout=60s >/dev/null 2>&1
done
# (No kube-scheduler reference here: its DynamicResources PreEnqueue holds a pod whose claim does
# not exist without trying it, so there is no event to wait for.)
DRA='.spec.resourceClaims = [{name: "gpu", resourceClaimName: "gpu-claim"}]'
pod t-dra "$SCHED" '{"app": "dra"}' "$DRA"
pending "tarema: a pod with a DRA resource claim, Pending (tarema allocates no DRA claims)" t-dra \
  'does not allocate DRA resource claims'

# No pod of this test on a node where it does not fit, and none of kube-scheduler's pods moved.
out=$(check_fit)
if [ $? = 0 ] && [ -z "$out" ]; then pass "every node's pods fit it"; else fail "every node's pods fit it" "$out"; fi
summary
