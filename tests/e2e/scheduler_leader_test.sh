#!/usr/bin/env bash
# tests/e2e/scheduler_leader_test.sh: two tarema-scheduler replicas with --leader-elect on one
# Lease: exactly one binds; when the leader freezes the other takes over; the old leader, once
# it runs again, sees it lost the Lease and binds nothing more.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): unconfined pods; a leader hand-over bound of a few seconds
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

ID=$SCHED_E2E_ID
NS=sched-le-$ID
SCHED=tarema-le-$ID
WORK=$(mktemp -d)
cleanup() {
  for p in "${SCHED_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
  stop_schedulers
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
cat >"$WORK/sched.yaml" <<EOF
schedulerName: $SCHED
qps: 500
burst: 1000
leaderElection: {enabled: true, namespace: $NS, name: lease-$ID, leaseMs: 3000, renewDeadlineMs: 2000, retryMs: 500}
EOF

start_scheduler "$WORK/a.log" --config "$WORK/sched.yaml" --identity replica-a || { fail "replica a starts" "$(tail -n 5 "$WORK/a.log")"; summary; exit 1; }
PA=$SCHED_PORT PID_A=$SCHED_PID
start_scheduler "$WORK/b.log" --config "$WORK/sched.yaml" --identity replica-b || { fail "replica b starts" "$(tail -n 5 "$WORK/b.log")"; summary; exit 1; }
PB=$SCHED_PORT PID_B=$SCHED_PID
pass "two replicas start"

one_leader() { local a b; a=$(metric "$PA" tarema_leader) && b=$(metric "$PB" tarema_leader) && [ "$((a + b))" = 1 ]; }
if wait_for 20 one_leader; then pass "exactly one replica leads"; else fail "exactly one replica leads" "a=$(metric "$PA" tarema_leader) b=$(metric "$PB" tarema_leader)"; fi
if [ "$(metric "$PA" tarema_leader)" = 1 ]; then
  LEAD_PID=$PID_A LEAD_PORT=$PA STBY_PORT=$PB LEAD=replica-a STBY=replica-b
else
  LEAD_PID=$PID_B LEAD_PORT=$PB STBY_PORT=$PA LEAD=replica-b STBY=replica-a
fi
holder=$(kubectl get lease -n "$NS" "lease-$ID" -o jsonpath='{.spec.holderIdentity}')
if [ "$holder" = "$LEAD" ]; then pass "the Lease names the leader ($LEAD)"; else fail "the Lease names the leader ($LEAD)" "holder '$holder'"; fi

create_pods() { # PREFIX COUNT
  local i
  pods_json "$NS" "$1" "$2" "$SCHED" 50m 64Mi >"$WORK/$1.json"
  kubectl create -f "$WORK/$1.json" >/dev/null
}
create_pods first 30
bound_at_least() { [ "$(bound_count "$NS")" -ge "$1" ]; }
if wait_for 60 bound_at_least 30; then pass "the leader binds pods"; else fail "the leader binds pods" "$(bound_count "$NS") of 30"; fi
lead_ok=$(metric "$LEAD_PORT" 'tarema_binds_total{result="ok"}')
stby_ok=$(metric "$STBY_PORT" 'tarema_binds_total{result="ok"}')
if [ "$lead_ok" = 30 ] && [ "$stby_ok" = 0 ]; then pass "only the leader binds (leader 30, standby 0)"; else fail "only the leader binds" "leader $lead_ok, standby $stby_ok"; fi

# Freeze the leader: the standby takes over once the Lease expires.
kill -STOP "$LEAD_PID"
stby_leads() { [ "$(metric "$STBY_PORT" tarema_leader)" = 1 ]; }
if wait_for 20 stby_leads; then pass "the standby takes over when the leader stops renewing"; else fail "the standby takes over when the leader stops renewing"; fi
kill -CONT "$LEAD_PID"
old_stepped_down() { [ "$(metric "$LEAD_PORT" tarema_leader)" = 0 ]; }
if wait_for 10 old_stepped_down; then pass "the old leader sees it lost the Lease"; else fail "the old leader sees it lost the Lease" "tarema_leader=$(metric "$LEAD_PORT" tarema_leader)"; fi

create_pods second 30
if wait_for 60 bound_at_least 60; then pass "the new leader binds new pods"; else fail "the new leader binds new pods" "$(bound_count "$NS") of 60"; fi
lead_ok2=$(metric "$LEAD_PORT" 'tarema_binds_total{result="ok"}')
stby_ok2=$(metric "$STBY_PORT" 'tarema_binds_total{result="ok"}')
if [ "$lead_ok2" = "$lead_ok" ] && [ "$stby_ok2" = 30 ]; then pass "the old leader binds nothing after losing the Lease"; else fail "the old leader binds nothing after losing the Lease" "old leader $lead_ok -> $lead_ok2, new leader $stby_ok2"; fi
ev=$(events_per_pod "$NS" Scheduled) && ev=$(awk '$2 != 1' <<<"$ev") || ev="listing the events failed"
if [ -z "$ev" ]; then pass "no pod bound twice across the hand-over"; else fail "no pod bound twice across the hand-over" "$ev"; fi
over=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json | jq -r --arg s "$STBY" '[.items[] | select(.reason == "Scheduled" and (.regarding.name | startswith("second-")) and .reportingInstance != $s)] | length') || over="unread (listing the events failed)"
if [ "$over" = 0 ]; then pass "Scheduled events of the new pods come from the new leader"; else fail "Scheduled events of the new pods come from the new leader" "$over from another instance"; fi
summary
