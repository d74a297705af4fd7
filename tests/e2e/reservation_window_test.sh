#!/usr/bin/env bash
# tests/e2e/reservation_window_test.sh: a Reservation RESV_WINDOW_LEAD_S (45) s ahead for 5 pods of 2 cores on
# the live scheduler (own kwok nodes: 5 of 2 cores, so the reservation holds all of them):
#  1. admitted: 5 pods held, one per node, phase Admitted, an Admitted event;
#  2. before the window, pods with a short known expected end (annotation
#     tarema.io/expected-duration, or spec.activeDeadlineSeconds) backfill; pods with a long or
#     unknown expected end do not (FailedScheduling says why);
#  3. the scheduler restarted in the middle: state rebuilt from the API server (same nodes, no
#     second admission, the long pod still kept off), nothing double-booked;
#  4. the owner's pods start on the reserved nodes when the window opens (phase Active);
#  5. release on finish: the owner's pods end, phase Released, nothing held, and the pods that
#     were kept off get the capacity.
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

# Time scale: the window opens LEAD s after the reservation is made (it was 120 s; the idle
# wait for the window was most of the test's time). Steps 1-3 take about 12 s on the 2-core
# machine; the backfilled pods end 10 s (expected-duration) and at most 20 s
# (activeDeadlineSeconds) after they bind, well before the window; the long pod (10 minutes)
# and the unknown one cannot. If steps 1-3 ever overran the window, the checks of step 3 say so
# (phase no longer Admitted) rather than passing.
LEAD=${RESV_WINDOW_LEAD_S:-45}
sched_e2e_begin resv rw
SET=a$ID
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: $P, count: 5, cpu: 2, memory: 8Gi, pods: 20,
     labels: {tarema.io/e2e-set: "$SET", tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2",
              tarema.io/group: "rw$ID"}}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start

# ---- 1. admitted ------------------------------------------------------------------------------
OWNER="{\"selector\":{\"matchLabels\":{\"step\":\"five-$ID\"}}}"
reservation_json "$NS" step5 "$LEAD" 720 5 2 "$SET" "$OWNER" | kubectl create -f - >/dev/null
T_START=$(($(date +%s) + LEAD))
if wait_for 30 phase_is "$NS" step5 Admitted; then pass "reservation admitted"; else fail "reservation admitted" "phase '$(resv_phase "$NS" step5)': $(resv_message "$NS" step5)"; fi
HELD=$(resv_nodes "$NS" step5)
if [ "$(resv_pods "$NS" step5)" = 5 ] && [ "$(echo "$HELD" | grep -c "^$P-")" = 5 ]; then
  pass "5 pods held, one on each of the 5 nodes"
else
  fail "5 pods held, one on each of the 5 nodes" "$(kubectl get reservation -n "$NS" step5 -o jsonpath='{.status}')"
fi
if [ "$(reservation_events "$NS" step5 Admitted)" = 1 ]; then pass "Admitted event"; else fail "Admitted event" "$(kubectl get events.events.k8s.io -n "$NS" -o wide)"; fi
kubectl get reservations -n "$NS" >"$WORK/get.txt"
if head -1 "$WORK/get.txt" | qgrep "PHASE.*START.*END.*NODES.*AGE" && grep -q "step5 *Admitted" "$WORK/get.txt" &&
  grep -q "$(echo "$HELD" | paste -sd, -)" "$WORK/get.txt"; then
  pass "kubectl get reservations shows phase, start, end, nodes, age"
else
  fail "kubectl get reservations shows phase, start, end, nodes, age" "$(cat "$WORK/get.txt")"
fi

# ---- 2. backfill before the window ---------------------------------------------------------------
{
  set_pod_json "$NS" short "$SCHED" "$SET" 2 '{}' '{"tarema.io/expected-duration":"10s","tarema.io/duration":"10s"}'
  # kwok ends it after 10 s; the scheduler only knows the kubelet would stop it at 20 s
  set_pod_json "$NS" deadline "$SCHED" "$SET" 2 '{}' '{"tarema.io/duration":"10s"}' | jq -c '.spec.activeDeadlineSeconds = 20'
  set_pod_json "$NS" long "$SCHED" "$SET" 2 '{}' '{"tarema.io/expected-duration":"10m"}'
  set_pod_json "$NS" unknown "$SCHED" "$SET" 2 '{}' '{}'
  for i in 1 2 3 4 5; do
    set_pod_json "$NS" "owner-$i" "$SCHED" "$SET" 2 "{\"step\":\"five-$ID\"}" '{"tarema.io/duration":"12s"}'
  done
} >"$WORK/pods.json"
kubectl create -f "$WORK/pods.json" >/dev/null
if wait_for 30 is_bound "$NS" short; then pass "pod with a short expected end backfills before the window"; else fail "pod with a short expected end backfills before the window" "$(kubectl get pods -n "$NS" -o wide)"; fi
if wait_for 15 is_bound "$NS" deadline; then pass "pod with a short activeDeadlineSeconds backfills before the window"; else fail "pod with a short activeDeadlineSeconds backfills before the window" "$(kubectl get pods -n "$NS" -o wide)"; fi
# No fixed sleep: the pods kept off are checked at every poll until the scheduler has tried each
# of them and said why not (PodScheduled False), then each once more; all five owner pods.
KEPT="long unknown owner-1 owner-2 owner-3 owner-4 owner-5"
all_off() { local p; for p in $KEPT; do not_bound "$NS" "$p" || return 1; done; }
all_refused() { local p; for p in $KEPT; do refused "$NS" "$p" || return 1; done; }
off_until_refused() {
  local deadline=$(($(date +%s) + 30))
  while :; do
    all_off || return 1
    all_refused && return 0
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
if off_until_refused; then pass "the scheduler tried every kept-off pod and said why not"; else fail "the scheduler tried every kept-off pod and said why not" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi
for p in $KEPT; do
  if not_bound "$NS" "$p"; then pass "$p not bound before the window"; else fail "$p not bound before the window" "node '$(pod_node "$NS" "$p" 2>&1)'"; fi
done
msg=$(kubectl get pod -n "$NS" long -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
if [[ $msg == *"reserved from a later time"* ]]; then pass "FailedScheduling names the reservation rule"; else fail "FailedScheduling names the reservation rule" "message: $msg"; fi

# ---- 3. restart in the middle --------------------------------------------------------------------
stop_schedulers
if ! start_scheduler "$WORK/sched2.log" --scheduler-name "$SCHED"; then
  fail "tarema-scheduler restarts" "$(tail -n 5 "$WORK/sched2.log")"
  summary
  exit 1
fi
wait_for 30 grep -q "reservation=$NS/step5 restored phase=Admitted nodes=5" "$WORK/sched2.log"
if grep -q "reservation=$NS/step5 restored phase=Admitted nodes=5" "$WORK/sched2.log" && [ "$(resv_nodes "$NS" step5)" = "$HELD" ] && phase_is "$NS" step5 Admitted; then
  pass "after a restart: the reservation rebuilt from its status (same 5 nodes, still Admitted)"
else
  fail "after a restart: the reservation rebuilt from its status" "$(grep reservation "$WORK/sched2.log" | tail -5)"
fi
if [ "$(reservation_events "$NS" step5 Admitted)" = 1 ]; then pass "not admitted twice"; else fail "not admitted twice" "$(reservation_events "$NS" step5 Admitted) Admitted events"; fi
# the restarted scheduler has had its chance at the 7 pending pods (long, unknown, five owners)
# once it counts 7 unschedulable attempts; kept off at every poll until then (no fixed sleep)
tried7() { local u; u=$(metric_sum "$SCHED_PORT" '^tarema_schedule_attempts_total[{]result="unschedulable"[}]$') && [ "$u" -ge 7 ]; }
both_off() { not_bound "$NS" long && not_bound "$NS" unknown; }
off_until_tried() {
  local deadline=$(($(date +%s) + 30))
  while :; do
    both_off || return 1
    tried7 && { both_off; return; }
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
if off_until_tried; then pass "after the restart, long and unknown still kept off (the restarted scheduler tried them)"; else fail "after the restart, long and unknown still kept off (the restarted scheduler tried them)" "unschedulable attempts '$(metric_sum "$SCHED_PORT" '^tarema_schedule_attempts_total[{]result="unschedulable"[}]$' 2>&1)'; $(kubectl get pods -n "$NS" -o wide 2>&1)"; fi
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its capacity"; else fail "no node over its capacity" "$out"; fi

# ---- 4. the window opens -------------------------------------------------------------------------
owners_bound() { local i; for i in 1 2 3 4 5; do is_bound "$NS" "owner-$i" || return 1; done; }
wait_s=$((T_START - $(date +%s) + 30))
if wait_for "$wait_s" owners_bound; then
  took=$(($(date +%s) - T_START))
  pass "the owner's 5 pods start when the window opens (${took}s after startTime)"
else
  fail "the owner's 5 pods start when the window opens" "$(kubectl get pods -n "$NS" -o wide)"
fi
on_held=0
for i in 1 2 3 4 5; do echo "$HELD" | qgrep -x "$(pod_node "$NS" "owner-$i")" && on_held=$((on_held + 1)); done
if [ "$on_held" = 5 ]; then pass "the owner's pods run on the reserved nodes"; else fail "the owner's pods run on the reserved nodes" "$on_held of 5"; fi
if wait_for 10 phase_is "$NS" step5 Active; then pass "phase Active in the window"; else fail "phase Active in the window" "$(resv_phase "$NS" step5)"; fi
if not_bound "$NS" long && not_bound "$NS" unknown; then pass "long and unknown kept off in the window"; else fail "long and unknown kept off in the window" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi

# ---- 5. release on finish ------------------------------------------------------------------------
if wait_for 90 phase_is "$NS" step5 Released; then
  pass "released when the owner's pods finished"
else
  fail "released when the owner's pods finished" "$(resv_phase "$NS" step5): $(resv_message "$NS" step5)"
fi
if [[ $(resv_message "$NS" step5) == *"owner's pods all finished"* ]] && held=$(resv_nodes "$NS" step5) && [ -z "$held" ]; then
  pass "release names the path and holds nothing"
else
  fail "release names the path and holds nothing" "$(kubectl get reservation -n "$NS" step5 -o jsonpath='{.status}')"
fi
both_bound() { is_bound "$NS" long && is_bound "$NS" unknown; }
if wait_for 30 both_bound; then pass "capacity free again: the kept-off pods bound"; else fail "capacity free again: the kept-off pods bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its capacity at the end"; else fail "no node over its capacity at the end" "$out"; fi
if grep -q "ERROR\|level=error" "$WORK/sched.log" "$WORK/sched2.log"; then fail "no errors logged" "$(grep -h "ERROR\|level=error" "$WORK"/sched*.log | head -3)"; else pass "no errors logged"; fi
summary
