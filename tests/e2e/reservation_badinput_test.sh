#!/usr/bin/env bash
# tests/e2e/reservation_badinput_test.sh: bad Reservations on the live scheduler: endTime before
# startTime, an owner that does not exist, larger than the cluster, a node group nobody has.
# Each ends in phase Failed with a message saying what is wrong and a Warning event; the
# scheduler keeps running and holds nothing (pods of unknown expected end use the nodes).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

sched_e2e_begin resv-bad rb
SET=e$ID
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF2
nodes:
  - {prefix: $P, count: 2, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "$SET"}}
EOF2
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start

ANY="{\"selector\":{\"matchLabels\":{\"step\":\"x$ID\"}}}"
{
  reservation_json "$NS" backwards 600 60 1 1 "$SET" "$ANY"
  reservation_json "$NS" no-owner 60 600 1 1 "$SET" "{\"kind\":\"PodGroup\",\"name\":\"missing-$ID\"}"
  reservation_json "$NS" too-big 60 600 50 2 "$SET" "$ANY"
  reservation_json "$NS" no-group 60 600 1 1 "$SET" "$ANY" | jq -c '.spec.nodeGroup = "nowhere"'
} >"$WORK/resv.json"
check "bad reservations accepted by the API server (the checks are the scheduler's)" kubectl create -f "$WORK/resv.json"
cases=(
  "backwards|is not after spec.startTime|InvalidReservation"
  "no-owner|owner PodGroup $NS/missing-$ID does not exist|OwnerNotFound"
  "too-big|larger than the cluster: 50 pods of 2 cpu need 100 cpu|NotAdmissible"
  "no-group|no node group matches|NotAdmissible"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name want reason <<<"$c"
  if wait_for 30 phase_is "$NS" "$name" Failed && [[ $(resv_message "$NS" "$name") == *"$want"* ]]; then
    pass "$name: Failed, \"$want\""
  else
    fail "$name: Failed, \"$want\"" "$(resv_phase "$NS" "$name"): $(resv_message "$NS" "$name")"
  fi
  if [ "$(reservation_events "$NS" "$name" "$reason")" -ge 1 ]; then pass "$name: $reason event"; else fail "$name: $reason event" "$(kubectl get events.events.k8s.io -n "$NS")"; fi
  if holds_none "$NS" "$name"; then pass "$name: nothing held"; else fail "$name: nothing held" "$(resv_nodes "$NS" "$name")"; fi
done
{
  set_pod_json "$NS" u1 "$SCHED" "$SET" 2 '{}' '{}'
  set_pod_json "$NS" u2 "$SCHED" "$SET" 2 '{}' '{}'
} | kubectl create -f - >/dev/null
both() { is_bound "$NS" u1 && is_bound "$NS" u2; }
if wait_for 30 both; then pass "no capacity held: pods of unknown expected end use both nodes"; else fail "no capacity held" "$(kubectl get pods -n "$NS" -o wide)"; fi
if kill -0 "$SCHED_PID" 2>/dev/null && sched_ready "$SCHED_PORT"; then pass "scheduler still running and ready"; else fail "scheduler still running and ready" "$(tail -n 5 "$WORK/sched.log")"; fi
# Nothing closes "not written again": one write at every poll for 3 s of ticks.
failed_writes() { grep -c "reservation=$NS/backwards phase=Failed" "$WORK/sched.log"; }
written_once() { [ "$(failed_writes)" = 1 ]; }
always_for 3 written_once
n=$(failed_writes)
if [ "$n" = 1 ]; then pass "a Failed reservation is written once, not on every tick"; else fail "a Failed reservation is written once" "$n writes"; fi
summary
