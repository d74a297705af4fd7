#!/usr/bin/env bash
# tests/e2e/scheduler_gates_test.sh: tarema-scheduler honours spec.schedulingGates (the planner
# gates a step's pods with tarema.io/planned and lifts the gate when the window opens, issue 15),
# against the real API server, on this test's own tainted nodes:
#  1. a pod with two gates stays Pending: no bind attempt (log, tarema_binds_total,
#     tarema_schedule_attempts_total), no FailedScheduling event, no 409; it is counted in
#     tarema_pending_pods{queue="gated"}; explain says which gates hold it
#  2. one gate removed: still Pending; the last removed: bound within 5 s (about 1 s unloaded)
#  3. a PodGroup gang of 2 with one member gated: none bound, and nothing held (two plain pods
#     take both nodes' whole cpu); once they are gone and the member is ungated, the gang binds
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

sched_e2e_begin gates gt
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<YAML
nodes:
  - {prefix: ${P}n, count: 2, cpu: 2, memory: 4Gi, pods: 20,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "g", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
YAML
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
# Before the scheduler starts: a PodGroup CRD installed later is not watched by it.
PG_API=1
if ! why=$(gang_require_api podgroup); then PG_API=0; fi
if ! start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" --log-level debug; then
  fail "tarema-scheduler starts and becomes ready" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler starts and becomes ready"
PORT=$SCHED_PORT

# pod NAME CPU GATES_JSON: one pod of this test (toleration, nodeSelector) with those gates.
pod() {
  pod_json "$NS" "$1" "$SCHED" "$2" 256Mi '{}' "$ID" |
    jq -c --arg id "$ID" --argjson g "$3" '.spec.nodeSelector = {"tarema.io/e2e": $id}
      | if ($g | length) > 0 then .spec.schedulingGates = $g else . end'
}
# events_of NAME: "reason: note" of the pod's events; nothing and status 1 when the list fails
events_of() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json) || return 1
  jq -r --arg n "$1" '.items[] | select(.regarding.name == $n) | "\(.reason): \(.note)"' <<<"$ev"
}
ungate_first() { kubectl patch pod -n "$NS" "$1" --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates/0"}]' >/dev/null; }
bound() { [ -n "$(pod_node "$NS" "$1")" ]; }
ms() { date +%s%3N; }
# later NAME: a plain pod created now and bound by the scheduler: the positive condition that it
# has had its chance at everything before it (its informer delivers events in order), instead
# of a fixed sleep before a negative check. Then deleted again (gone before the function returns).
later() {
  pod "$1" 100m '[]' | kubectl create -f - >/dev/null
  wait_for 30 bound "$1" || { fail "a later pod ($1) is bound" "node '$(pod_node "$NS" "$1")'"; return 1; }
  kubectl delete pod -n "$NS" "$1" --wait=false >/dev/null
  wait_for 30 bash -c "! kubectl get pod -n $NS $1 >/dev/null 2>&1"
}

# ---- 1. gated: never tried ------------------------------------------------------------------------
pod gated 500m '[{"name": "tarema.io/planned"}, {"name": "example.com/other"}]' | kubectl create -f - >/dev/null
wait_for 10 bash -c "[ \"\$(curl -sf http://127.0.0.1:$PORT/metrics | awk '\$1 == \"tarema_pending_pods{queue=\\\"gated\\\"}\" {print \$2}')\" = 1 ]"
g=$(metric "$PORT" 'tarema_pending_pods{queue="gated"}')
if [ "$g" = 1 ]; then pass "the gated pod is counted as gated"; else fail "the gated pod is counted as gated" "tarema_pending_pods{queue=\"gated\"} = $g"; fi
later later1
if ! bound gated && [ "$(kubectl get pod -n "$NS" gated -o jsonpath='{.status.phase}')" = Pending ]; then pass "a gated pod stays Pending"; else fail "a gated pod stays Pending" "node $(pod_node "$NS" gated)"; fi
ev=$(events_of gated) || ev="unread: listing the events failed"
if ! grep -q "FailedScheduling\|Scheduled\|unread" <<<"$ev"; then pass "no FailedScheduling event for the gated pod"; else fail "no FailedScheduling event for the gated pod" "$ev"; fi
tried=$(grep -E "pod=$NS/gated|$NS/gated" "$WORK/sched.log" | grep -Ei "assumed|bind|409|schedulingGates" || true)
if [ -z "$tried" ]; then pass "no bind attempt in the scheduler's log"; else fail "no bind attempt in the scheduler's log" "$tried"; fi
# metric_sum fails when the scrape fails (a dead scheduler is no "0 binds"); the one bind and
# attempt are the later pod's
b=$(metric_sum "$PORT" '^tarema_binds_total')
a=$(metric_sum "$PORT" '^tarema_schedule_attempts_total')
if [ "$b" = 1 ] && [ "$a" = 1 ]; then pass "no bind and no scheduling attempt in the metrics but the later pod's"; else fail "no bind and no scheduling attempt in the metrics but the later pod's" "binds '$b' attempts '$a' (want 1 and 1)"; fi
text=$("$BIN/tarema-scheduler" explain "$NS/gated" 2>&1)
if grep -q "gated: .*tarema.io/planned, example.com/other" <<<"$text"; then pass "explain says the pod is gated and by which gates"; else fail "explain says the pod is gated and by which gates" "$text"; fi

# ---- 2. ungated: bound at once ------------------------------------------------------------------
ungate_first gated
later later2
if ! bound gated && [ -n "$(read_ok kubectl get pod -n "$NS" gated -o name)" ]; then pass "one gate of two removed: still Pending"; else fail "one gate of two removed: still Pending"; fi
# t0 once the patch has returned (the kubectl start-up and the patch's round trip are not the
# scheduler's), and up to 5 s: t1 is taken by polling (a kubectl get every 0.2 s, each slow on a
# loaded 2-core host), so ~2 s of bind could read as 2.5 s and more. An ungating the scheduler
# missed would wait for the 60 s unschedulable flush, or forever: far above 5 s.
ungate_first gated
t0=$(ms)
wait_for 10 bound gated
t1=$(ms)
if bound gated && [ $((t1 - t0)) -le 5000 ]; then pass "the last gate removed: bound in $((t1 - t0)) ms"; else fail "the last gate removed: bound within 5 s" "bound=$(pod_node "$NS" gated) after $((t1 - t0)) ms"; fi
echo "    ungate-to-bind: $((t1 - t0)) ms"
c=$(metric "$PORT" 'tarema_binds_total{result="conflict"}') # nothing when the scrape fails
if [ "$c" = 0 ]; then pass "no 409 conflict on bind"; else fail "no 409 conflict on bind" "conflicts $c"; fi
kubectl delete pod -n "$NS" gated --wait=false >/dev/null
wait_for 30 bash -c "! kubectl get pod -n $NS gated >/dev/null 2>&1"

# ---- 3. a gated gang member: the gang waits, holding nothing ----------------------------------
if [ "$PG_API" = 1 ]; then
  GANG_POD_PATCH=".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
    | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"}
    | if .metadata.name == \"gg-2\" then .spec.schedulingGates = [{name: \"tarema.io/planned\"}] else . end" \
    gang_create podgroup "$NS" gg 2 2 "$SCHED" 2 256Mi
  # no fixed sleep: the two plain pods created after the gang are bound (the scheduler has had its
  # chance at the gang), then none of the gang may be bound
  pod free1 2 '[]' | kubectl create -f - >/dev/null
  pod free2 2 '[]' | kubectl create -f - >/dev/null
  if wait_for 20 bound free1 && wait_for 20 bound free2; then pass "nothing held: two plain pods take both nodes' whole cpu"; else fail "nothing held: two plain pods take both nodes' whole cpu" "free1=$(pod_node "$NS" free1) free2=$(pod_node "$NS" free2)"; fi
  n=$(read_jq '[.items[] | select(.spec.nodeName // "" != "")] | length' kubectl get pods -n "$NS" -l tarema.io/gang-e2e=gg -o json)
  c=$(count_lines kubectl get pods -n "$NS" -l tarema.io/gang-e2e=gg -o name)
  if [ "$n" = 0 ] && [ "$c" = 2 ]; then pass "a gang with a gated member: none bound (of its 2 pods)"; else fail "a gang with a gated member: none bound" "bound '$n' of '$c'"; fi
  kubectl delete pod -n "$NS" free1 free2 --wait=false >/dev/null
  wait_for 30 bash -c "[ -z \"\$(kubectl get pod -n $NS free1 free2 -o name 2>/dev/null)\" ]"
  t0=$(ms)
  ungate_first gg-2
  gang_whole() { [ "$(kubectl get pods -n "$NS" -l tarema.io/gang-e2e=gg -o json | jq '[.items[] | select(.spec.nodeName // "" != "")] | length')" = 2 ]; }
  if wait_for 20 gang_whole; then pass "member ungated: the gang binds whole ($(($(ms) - t0)) ms)"; else fail "member ungated: the gang binds whole" "$(kubectl get pods -n "$NS" -o wide 2>&1; grep -E "gg-|gang" "$WORK/sched.log" | tail -n 12)"; fi
else
  fail "the PodGroup API is served" "$why"
fi
summary
