#!/usr/bin/env bash
# tests/e2e/scheduler_live_test.sh: tarema-scheduler against the real local control plane.
#  1. labeled pods land in the node group tarema's formula predicts, and fall through to the
#     next group when the preferred one is full (own tainted kwok nodes with tarema labels);
#  2. a pod that fits nowhere gets PodScheduled=False/Unschedulable and a FailedScheduling event
#     (once: a retry with the same outcome does not post it again), and is bound as soon as a
#     node with room appears (retry on cluster change);
#  3. 1,000 pods on the heterogeneous paper nodes: all bound, none onto a node where it does not
#     fit (every pod of every scheduler counted), no pod bound twice, one Scheduled event each;
#  4. pods of another scheduler are left alone; explain describes a bound pod;
#  5. volumes: a pod whose claim is bound to a volume with node affinity lands on that volume's
#     node whatever its task labels prefer; a pod whose claim does not exist yet is reported
#     (kube-scheduler's message, also in explain) and bound once the claim is.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): 1,000 unconfined pods on the paper nodes; checks every node's allocation
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin sched se
extra_cleanup() {
  kubectl delete namespace "$NS-vol" --wait=false >/dev/null 2>&1 || true
  kubectl delete pv "e2e-local-$ID" "e2e-any-$ID" --wait=false >/dev/null 2>&1 || true
}
sched_e2e_namespace

# Own nodes for the label tests: three groups by tarema labels, tainted so that only this
# test's tolerating pods use them, and labelled so that those pods use only them (untainted
# nodes of other tests may carry tarema labels too: the profiler's, in deploy_cluster_test).
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}slow, count: 2, cpu: 2, memory: 4Gi, pods: 20,
     labels: {tarema.io/cpu: "1", tarema.io/mem: "1", tarema.io/io: "1", tarema.io/group: "slow", tarema.io/e2e-own: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}mid, count: 2, cpu: 4, memory: 8Gi, pods: 20,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "mid", tarema.io/e2e-own: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}fast, count: 1, cpu: 16, memory: 32Gi, pods: 20,
     labels: {tarema.io/cpu: "3", tarema.io/mem: "3", tarema.io/io: "3", tarema.io/group: "fast", tarema.io/e2e-own: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"

# Every cycle's plugin calls timed (kube's pluginMetricsSamplePercent is 10): part 3 checks
# scheduler_plugin_execution_duration_seconds for the calls this test makes happen.
if ! start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" --qps 2000 --burst 4000 --plugin-metrics-sample-percent 100; then
  fail "tarema-scheduler starts and becomes ready" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler starts and becomes ready"
PORT=$SCHED_PORT

# ---- 1. labeled pods and their groups ------------------------------------------------------
# Keeps a pod on this test's own nodes (stdin to stdout).
own_nodes() { jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e-own": $id}'; }
ann() { jq -cn --arg c "$1" --arg m "$2" --arg i "$3" '{"tarema.io/cpu": $c, "tarema.io/mem": $m, "tarema.io/io": $i}'; }
# name cpu-label mem-label io-label expected-group
labeled=(
  "t-111 1 1 1 slow"  # distance slow 0, mid 3, fast 6
  "t-222 2 2 2 mid"   # mid 0
  "t-312 3 1 2 mid"   # slow 3, mid 2, fast 3
  "t-131 1 3 1 slow"  # slow 2, mid 3, fast 4
  "t-333 3 3 3 fast"  # fast 0
)
for l in "${labeled[@]}"; do
  set -- $l
  pod_json "$NS" "$1" "$SCHED" 100m 128Mi "$(ann "$2" "$3" "$4")" "$ID" | own_nodes
done >"$WORK/labeled.json"
kubectl create -f "$WORK/labeled.json" >/dev/null
all_labeled_bound() { [ "$(bound_count "$NS")" -ge 5 ]; }
if wait_for 60 all_labeled_bound; then pass "labeled pods bound"; else fail "labeled pods bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
for l in "${labeled[@]}"; do
  set -- $l
  node=$(pod_node "$NS" "$1")
  if [[ $node == "${P}$5-"* ]]; then pass "$1 (task labels $2,$3,$4) in group $5"; else fail "$1 (task labels $2,$3,$4) in group $5" "bound to '$node'"; fi
done

# Fall-through: six (3,3,3) pods of 3 cpu: the fast node (16 cpu, 0.1 used) takes five, the
# sixth goes to the next group by distance (mid: 3), not to slow (6) nor an unprofiled node.
for i in 1 2 3 4 5 6; do
  pod_json "$NS" "f-$i" "$SCHED" 3 1Gi "$(ann 3 3 3)" "$ID" | own_nodes
done >"$WORK/fall.json"
kubectl create -f "$WORK/fall.json" >/dev/null
all_fall_bound() { [ "$(bound_count "$NS")" -ge 11 ]; }
if wait_for 60 all_fall_bound; then pass "fall-through pods bound"; else fail "fall-through pods bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
groups=$(for i in 1 2 3 4 5 6; do pod_node "$NS" "f-$i" | sed "s/^$P//; s/-[0-9]*$//"; echo; done | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
if [ "$groups" = "fast=5 mid=1 " ]; then pass "full preferred group falls through to the next (fast=5 mid=1)"; else fail "full preferred group falls through to the next (fast=5 mid=1)" "got: $groups"; fi

# ---- 2. unschedulable, then schedulable after a cluster change ------------------------------
pod_json "$NS" big "$SCHED" 40 1Gi "$(ann 3 3 3)" "$ID" | kubectl create -f - >/dev/null
unsched_condition() {
  kubectl get pod -n "$NS" big -o json | jq -e '.status.conditions[]? | select(.type == "PodScheduled" and .status == "False" and .reason == "Unschedulable")'
}
if wait_for 30 unsched_condition; then pass "unschedulable pod gets PodScheduled=False reason Unschedulable"; else fail "unschedulable pod gets PodScheduled=False reason Unschedulable" "$(kubectl get pod -n "$NS" big -o jsonpath='{.status}')"; fi
failed_event() {
  kubectl get events.events.k8s.io -n "$NS" -o json | jq -e '.items[] | select(.reason == "FailedScheduling" and .regarding.name == "big" and .type == "Warning" and (.note | test("^0/[0-9]+ nodes are available: .*Insufficient cpu")))'
}
if wait_for 30 failed_event; then pass "FailedScheduling event with kube-scheduler's per-reason node counts"; else fail "FailedScheduling event with kube-scheduler's per-reason node counts" "$(events_per_pod "$NS" FailedScheduling)"; fi
# A cluster change that does not help (a node label) makes it retry with the same outcome:
# reported once, not once per retry.
u0=$(metric "$PORT" 'tarema_schedule_attempts_total{result="unschedulable"}')
kubectl label node "${P}slow-1" "tarema.io/e2e-touch=$ID" >/dev/null
retried() { [ "$(metric "$PORT" 'tarema_schedule_attempts_total{result="unschedulable"}')" -gt "$u0" ]; }
big_events() { read_jq '[.items[] | select(.reason == "FailedScheduling" and .regarding.name == "big")] | length' kubectl get events.events.k8s.io -n "$NS" -o json; }
one_big_event() { [ "$(big_events)" = 1 ]; }
if wait_for 30 retried; then
  # The event of a retry is posted after the attempt is counted: exactly one event at every poll
  # for 2 s (a failed read is not "1").
  if always_for 2 one_big_event; then pass "an unchanged FailedScheduling is not reported again on retry"; else fail "an unchanged FailedScheduling is not reported again on retry" "not 1 at every poll for 2 s; now: $(big_events 2>&1) FailedScheduling events for big"; fi
else
  fail "unschedulable pod retried after a node changed" "attempts stayed at $u0"
fi
cat >"$WORK/huge.yaml" <<EOF
nodes:
  - {prefix: ${P}huge, count: 1, cpu: 64, memory: 64Gi, pods: 20,
     labels: {tarema.io/cpu: "3", tarema.io/mem: "3", tarema.io/io: "3", tarema.io/group: "fast"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/huge.yaml" >/dev/null 2>&1
big_bound() { [ "$(pod_node "$NS" big)" = "${P}huge-1" ]; }
if wait_for 30 big_bound; then pass "unschedulable pod bound once a node with room appears"; else fail "unschedulable pod bound once a node with room appears" "node '$(pod_node "$NS" big)'"; fi

# ---- 3. 1,000 pods on the paper nodes -------------------------------------------------------
N=1000
# pod p-i asks for cpu 40m/80m/120m by i % 3 and memory 64Mi/128Mi/256Mi by (i / 3) % 3
pods_json "$NS" p "$N" "$SCHED" 40m 64Mi |
  jq -c '(.metadata.name | ltrimstr("p-") | tonumber) as $i |
         .spec.containers[0].resources.requests = {cpu: ["40m", "80m", "120m"][$i % 3],
                                                    memory: ["64Mi", "128Mi", "256Mi"][($i / 3 | floor) % 3]}' >"$WORK/pods.json"
split -n l/8 "$WORK/pods.json" "$WORK/chunk."
t0=$(date +%s.%N)
creators=()
for c in "$WORK"/chunk.*; do
  kubectl create -f "$c" >/dev/null &
  creators+=($!)
done
wait "${creators[@]}" # not a bare wait: the scheduler is a child too
t1=$(date +%s.%N)
want=$((N + 12))
all_bound() { [ "$(bound_count "$NS")" -ge "$want" ]; }
if wait_for 120 all_bound; then
  t2=$(date +%s.%N)
  pass "$N pods bound (created in $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s, all bound $(printf '%.1f' "$(echo "$t2 - $t0" | bc)") s after the first create)"
else
  fail "$N pods bound" "$(bound_count "$NS") of $want bound; $(tail -n 5 "$WORK/sched.log")"
fi
if ! over=$(check_fit 2>&1); then
  fail "no node holds more than its allocatable (all pods, all schedulers)" "check did not run: $over"
elif [ -z "$over" ]; then pass "no node holds more than its allocatable (all pods, all schedulers)"; else fail "no node holds more than its allocatable (all pods, all schedulers)" "$over"; fi
on_test_nodes=$(kubectl get pods -n "$NS" -o json | jq --arg p "$P" '[.items[] | select(.metadata.name | startswith("p-")) | select(.spec.nodeName | startswith($p))] | length')
if [ "$on_test_nodes" = 0 ]; then pass "no pod on a node whose taint it does not tolerate"; else fail "no pod on a node whose taint it does not tolerate" "$on_test_nodes pods on tainted nodes"; fi
scheduled_ok() {
  local ev
  ev=$(events_per_pod "$NS" Scheduled)
  [ "$(wc -l <<<"$ev")" -ge "$want" ]
}
wait_for 30 scheduled_ok
ev=$(events_per_pod "$NS" Scheduled)
twice=$(awk '$2 != 1' <<<"$ev" | head -n 5)
if [ "$(wc -l <<<"$ev")" = "$want" ] && [ -z "$twice" ]; then pass "exactly one Scheduled event per pod"; else fail "exactly one Scheduled event per pod" "$(wc -l <<<"$ev") pods with events; more than one: $twice"; fi
ok=$(metric "$PORT" 'tarema_binds_total{result="ok"}')
conflicts=$(metric "$PORT" 'tarema_binds_total{result="conflict"}')
if [ "$ok" = "$want" ] && [ "$conflicts" = 0 ]; then pass "one bind per pod, no conflicts (binds ok=$ok)"; else fail "one bind per pod, no conflicts" "binds ok=$ok conflict=$conflicts, want $want and 0"; fi
# One scrape, then grep: `curl | qgrep` under pipefail fails whenever grep exits before curl
# has written everything (SIGPIPE), which made this check flaky.
metrics=$(curl -sf "http://127.0.0.1:$PORT/metrics")
for m in tarema_pending_pods tarema_binds_in_flight 'tarema_api_requests{state="wire"}' tarema_scheduling_attempt_duration_seconds_count 'tarema_schedule_attempts_total{result="scheduled"}'; do
  if grep -q "^$m" <<<"$metrics"; then pass "metric $m served"; else fail "metric $m served"; fi
done
# kube-scheduler's names for the same series, from the same scrape: the same value, with the
# scheduler name as kube-scheduler's profile label (dashboards written for kube-scheduler).
ours=$(awk '$1 == "tarema_schedule_attempts_total{result=\"scheduled\"}" {print $2}' <<<"$metrics")
kube=$(awk -v k="scheduler_schedule_attempts_total{profile=\"$SCHED\",result=\"scheduled\"}" '$1 == k {print $2}' <<<"$metrics")
if [ -n "$ours" ] && [ "$ours" -gt 0 ] && [ "$kube" = "$ours" ]; then pass "scheduler_schedule_attempts_total{profile=$SCHED} equals tarema's ($ours)"; else fail "scheduler_schedule_attempts_total{profile=$SCHED} equals tarema's" "tarema '$ours', kube name '$kube'"; fi
for m in 'scheduler_pending_pods{queue="active"}' "scheduler_scheduling_attempt_duration_seconds_count{profile=\"$SCHED\",result=\"scheduled\"}" scheduler_pod_scheduling_sli_duration_seconds_count; do
  if grep -qF "$m" <<<"$metrics"; then pass "metric $m served"; else fail "metric $m served"; fi
done
# kube-scheduler's framework timings (sampling 100 %): every extension point a bound pod passes
# through, per profile, and each plugin's calls with kube's status names. The pods above were
# bound (Success at Filter for NodeResourcesFit on the nodes they fit), part 2's pod fitted
# nowhere (Unschedulable from NodeResourcesFit), and this test's own nodes are tainted against
# the paper pods (TaintToleration's rejections cannot be resolved by preemption).
count_of() { awk -v k="$1" '$1 == k {print $2}' <<<"$metrics"; }
positive() { local v; v=$(count_of "$1"); [ -n "$v" ] && awk -v v="$v" 'BEGIN {exit !(v > 0)}'; }
for ep in PreFilter PreScore Score Reserve Permit; do
  m="scheduler_framework_extension_point_duration_seconds_count{profile=\"$SCHED\",extension_point=\"$ep\",status=\"Success\"}"
  if positive "$m"; then pass "$m > 0 ($(count_of "$m"))"; else fail "$m > 0" "got '$(count_of "$m")'"; fi
done
for c in 'NodeResourcesFit",extension_point="Filter",status="Success' \
         'NodeResourcesFit",extension_point="Filter",status="Unschedulable' \
         'TaintToleration",extension_point="Filter",status="UnschedulableAndUnresolvable'; do
  m="scheduler_plugin_execution_duration_seconds_count{plugin=\"$c\"}"
  if positive "$m"; then pass "$m > 0 ($(count_of "$m"))"; else fail "$m > 0" "got '$(count_of "$m")'"; fi
done
# every label value one kube-scheduler uses, and kube's bucket layouts (first and last bounds)
bad=$(grep -E '^scheduler_(plugin_execution|framework_extension_point)_duration_seconds_count' <<<"$metrics" |
  grep -vE 'extension_point="(PreFilter|Filter|PostFilter|PreScore|Score|Reserve|Unreserve|Permit|PreBind|Bind)",status="(Success|Error|Unschedulable|UnschedulableAndUnresolvable|Wait|Skip)"' | head -n 3)
if [ -z "$bad" ]; then pass "framework timings carry kube-scheduler's extension_point and status values"; else fail "framework timings carry kube-scheduler's extension_point and status values" "$bad"; fi
if grep -qF 'scheduler_plugin_execution_duration_seconds_bucket{plugin="NodeResourcesFit",extension_point="Filter",status="Success",le="1e-05"}' <<<"$metrics" &&
   grep -qF "scheduler_framework_extension_point_duration_seconds_bucket{profile=\"$SCHED\",extension_point=\"Score\",status=\"Success\",le=\"0.2048\"}" <<<"$metrics"; then
  pass "framework timings use kube-scheduler's buckets (plugins from 10 us, extension points to 204.8 ms)"
else
  fail "framework timings use kube-scheduler's buckets"
fi

# ---- 4. foreign pods and explain ---------------------------------------------------------------
pod_json "$NS" foreign other-scheduler-$ID 100m 64Mi | kubectl create -f - >/dev/null
# Nothing closes "left alone": unbound at every poll for 2 s, and a failed read is not "unbound".
foreign_unbound() { local n; n=$(kubectl get pod -n "$NS" foreign -o jsonpath='{.spec.nodeName}') && [ -z "$n" ]; }
if always_for 2 foreign_unbound; then pass "a pod of another scheduler is left alone"; else fail "a pod of another scheduler is left alone" "bound to $(pod_node "$NS" foreign)"; fi
out=$("$BIN/tarema-scheduler" explain "$NS/t-312" -o json --scheduler-name "$SCHED" 2>"$WORK/explain.err")
if jq -e --arg n "$(pod_node "$NS" t-312)" '.boundTo == $n and (.groups | map(select(.id == "mid"))[0].distance == 2) and (.groups[0].id == "mid")' <<<"$out" >/dev/null; then
  pass "explain shows the groups' distances and the bound node"
else
  fail "explain shows the groups' distances and the bound node" "$(cat "$WORK/explain.err"; head -c 600 <<<"$out")"
fi
out=$("$BIN/tarema-scheduler" explain "$NS/big" --scheduler-name "$SCHED" 2>&1)
if grep -q "Insufficient cpu" <<<"$out"; then pass "explain (text) names why nodes were filtered"; else fail "explain (text) names why nodes were filtered" "$(head -n 10 <<<"$out")"; fi
if "$BIN/tarema-scheduler" explain "$NS/no-such-pod" >/dev/null 2>"$WORK/err"; then
  fail "explain of a missing pod fails clearly"
elif grep -q "no-such-pod" "$WORK/err"; then pass "explain of a missing pod fails clearly"; else fail "explain of a missing pod fails clearly" "$(cat "$WORK/err")"; fi

# ---- 5. volumes ------------------------------------------------------------------------------
VNS=$NS-vol
kubectl create namespace "$VNS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$VNS"
kubectl label node "${P}slow-2" "tarema.io/e2e-vol=$ID" >/dev/null
# pv NAME [NODE-LABEL-VALUE]: a 1Gi volume; with a value, reachable only from nodes labelled so
pv() {
  jq -cn --arg n "$1" --arg v "${2:-}" --arg sc "e2e-$ID" '
    {apiVersion: "v1", kind: "PersistentVolume", metadata: {name: $n},
     spec: {capacity: {storage: "1Gi"}, accessModes: ["ReadWriteOnce"], storageClassName: $sc,
            persistentVolumeReclaimPolicy: "Retain", hostPath: {path: "/tmp/tarema-e2e"}}}
    | if $v != "" then .spec.nodeAffinity = {required: {nodeSelectorTerms: [{matchExpressions:
        [{key: "tarema.io/e2e-vol", operator: "In", values: [$v]}]}]}} else . end'
}
# pvc NAME VOLUME: a claim pre-bound to VOLUME
pvc() {
  jq -cn --arg ns "$VNS" --arg n "$1" --arg v "$2" --arg sc "e2e-$ID" '
    {apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: {namespace: $ns, name: $n},
     spec: {accessModes: ["ReadWriteOnce"], storageClassName: $sc, volumeName: $v,
            resources: {requests: {storage: "1Gi"}}}}'
}
# vol_pod NAME CLAIM: a (3,3,3)-labelled pod (it prefers the fast group) using CLAIM
vol_pod() {
  pod_json "$VNS" "$1" "$SCHED" 100m 64Mi "$(ann 3 3 3)" "$ID" |
    jq -c --arg c "$2" '.spec.volumes = [{name: "work", persistentVolumeClaim: {claimName: $c}}]'
}
pv "e2e-local-$ID" "$ID" | kubectl create -f - >/dev/null
pvc local "e2e-local-$ID" | kubectl create -f - >/dev/null
vol_pod vol-local local | kubectl create -f - >/dev/null
vol_local_bound() { [ -n "$(pod_node "$VNS" vol-local)" ]; }
if wait_for 30 vol_local_bound && [ "$(pod_node "$VNS" vol-local)" = "${P}slow-2" ]; then
  pass "a pod whose claim is bound to a node-local volume lands on that volume's node (not its preferred group)"
else
  fail "a pod whose claim is bound to a node-local volume lands on that volume's node" "bound to '$(pod_node "$VNS" vol-local)', want ${P}slow-2"
fi
vol_pod vol-later later | kubectl create -f - >/dev/null
claim_event() {
  kubectl get events.events.k8s.io -n "$VNS" -o json | jq -e '.items[] | select(.reason == "FailedScheduling" and .regarding.name == "vol-later" and (.note | test("persistentvolumeclaim \"later\" not found")))'
}
if wait_for 30 claim_event; then pass "a pod whose claim does not exist gets FailedScheduling naming the claim"; else fail "a pod whose claim does not exist gets FailedScheduling naming the claim" "$(events_per_pod "$VNS" FailedScheduling; pod_node "$VNS" vol-later)"; fi
out=$("$BIN/tarema-scheduler" explain "$VNS/vol-later" --scheduler-name "$SCHED" 2>&1)
if grep -q 'persistentvolumeclaim "later" not found' <<<"$out"; then pass "explain shows the VolumeBinding reason"; else fail "explain shows the VolumeBinding reason" "$(head -n 12 <<<"$out")"; fi
pv "e2e-any-$ID" | kubectl create -f - >/dev/null
pvc later "e2e-any-$ID" | kubectl create -f - >/dev/null
vol_later_bound() { [ -n "$(pod_node "$VNS" vol-later)" ]; }
if wait_for 30 vol_later_bound; then pass "the pod is bound once its claim exists and is bound (to $(pod_node "$VNS" vol-later))"; else fail "the pod is bound once its claim exists and is bound" "$(tail -n 5 "$WORK/sched.log")"; fi

stop_schedulers
if grep -q "stopping scheduled=" "$WORK/sched.log"; then pass "SIGTERM stops the scheduler cleanly"; else fail "SIGTERM stops the scheduler cleanly" "$(tail -n 3 "$WORK/sched.log")"; fi
summary
