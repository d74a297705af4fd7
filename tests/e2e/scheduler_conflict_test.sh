#!/usr/bin/env bash
# tests/e2e/scheduler_conflict_test.sh: bind conflicts (HTTP 409) against the real API server.
# Two tarema-scheduler processes with the same scheduler name and no leader election run side
# by side; only once both answer /readyz (their informers synced) are the pods created, so both
# watches deliver every pod and both bind it: one bind wins, the other is refused with 409.
# (Creating the backlog first let the first scheduler to become ready bind all 300 pods before
# the second had listed them: seen in CI, a=0 b=300, no race at all.) The loser must
# drop its reservation, requeue, learn from the watch that the pod is bound and leave it: every
# pod bound exactly once, one Scheduled event each, no node over its allocatable, both queues
# empty, and as many successful binds in total as pods.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): unconfined pods; checks every node's allocation
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

ID=$SCHED_E2E_ID
NS=sched-cf-$ID
SCHED=tarema-cf-$ID
N=300
WORK=$(mktemp -d)
cleanup() {
  stop_schedulers
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
pods_json "$NS" c "$N" "$SCHED" 50m 64Mi >"$WORK/pods.json"

# start_scheduler returns once its scheduler is ready (informers synced).
start_scheduler "$WORK/a.log" --scheduler-name "$SCHED" --qps 1000 --burst 2000 --leader-elect=false &
start_scheduler "$WORK/b.log" --scheduler-name "$SCHED" --qps 1000 --burst 2000 --leader-elect=false &
wait
ports() { sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$1" | head -n 1; }
PA=$(ports "$WORK/a.log") PB=$(ports "$WORK/b.log")
if [ -n "$PA" ] && [ -n "$PB" ]; then pass "two schedulers of the same name start"; else fail "two schedulers of the same name start" "$(tail -n 3 "$WORK/a.log" "$WORK/b.log")"; summary; exit 1; fi
# start_scheduler ran in subshells: find the processes by their logs' ports for stop_schedulers
SCHED_PIDS=($(pgrep -f "tarema-scheduler --port 0 --scheduler-name $SCHED"))
check "$N pending pods created while both schedulers run" kubectl create -f "$WORK/pods.json"

all_bound() { [ "$(bound_count "$NS")" -ge $N ]; }
if wait_for 60 all_bound; then pass "all $N pods bound"; else fail "all $N pods bound" "$(bound_count "$NS") bound"; fi
settled() { [ "$(metric "$PA" tarema_pending_pods)" = 0 ] && [ "$(metric "$PB" tarema_pending_pods)" = 0 ] && [ "$(metric "$PA" tarema_binds_in_flight)" = 0 ] && [ "$(metric "$PB" tarema_binds_in_flight)" = 0 ]; }
if wait_for 30 settled; then pass "both queues empty, no bind in flight"; else fail "both queues empty, no bind in flight" "pending a=$(metric "$PA" tarema_pending_pods) b=$(metric "$PB" tarema_pending_pods)"; fi

ok_a=$(metric "$PA" 'tarema_binds_total{result="ok"}') ok_b=$(metric "$PB" 'tarema_binds_total{result="ok"}')
cf_a=$(metric "$PA" 'tarema_binds_total{result="conflict"}') cf_b=$(metric "$PB" 'tarema_binds_total{result="conflict"}')
if [ $((cf_a + cf_b)) -gt 0 ]; then pass "binds refused with 409 happened (a=$cf_a b=$cf_b)"; else fail "binds refused with 409 happened" "none: the schedulers did not race (ok a=$ok_a b=$ok_b)"; fi
if [ $((ok_a + ok_b)) = $N ]; then pass "successful binds add up to the pods (a=$ok_a b=$ok_b)"; else fail "successful binds add up to the pods" "a=$ok_a b=$ok_b, want $N"; fi
errs=$(ea=$(metric "$PA" 'tarema_binds_total{result="error"}') && eb=$(metric "$PB" 'tarema_binds_total{result="error"}') && echo $((ea + eb))) || errs="unread (a /metrics scrape failed)"
if [ "$errs" = 0 ]; then pass "no bind failed otherwise"; else fail "no bind failed otherwise" "$errs errors"; fi

scheduled_all() { [ "$(events_per_pod "$NS" Scheduled | wc -l)" -ge $N ]; }
wait_for 30 scheduled_all
ev=$(events_per_pod "$NS" Scheduled)
twice=$(awk '$2 != 1' <<<"$ev" | head -n 5)
if [ "$(wc -l <<<"$ev")" = $N ] && [ -z "$twice" ]; then pass "exactly one Scheduled event per pod"; else fail "exactly one Scheduled event per pod" "$(wc -l <<<"$ev") pods with events; more than one: $twice"; fi
fs=$(events_per_pod "$NS" FailedScheduling) || fs="(listing the events failed)"
failed=$(grep -c . <<<"$fs")
if [ -z "$fs" ]; then pass "a lost bind is not reported as FailedScheduling"; else fail "a lost bind is not reported as FailedScheduling" "$failed pods with FailedScheduling"; fi
if ! over=$(check_fit 2>&1); then
  fail "no node holds more than its allocatable" "check did not run: $over"
elif [ -z "$over" ]; then pass "no node holds more than its allocatable"; else fail "no node holds more than its allocatable" "$over"; fi
if grep -q "bind failed .*status=409" "$WORK/a.log" "$WORK/b.log"; then pass "the conflict is logged with its status"; else fail "the conflict is logged with its status"; fi

stop_schedulers
summary
