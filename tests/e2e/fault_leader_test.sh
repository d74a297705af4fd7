#!/usr/bin/env bash
# Fault test: the leading tarema-scheduler killed -9 with binds in flight (issue 13: the fault
# suite). Two replicas with leader election on one Lease (3 s, renew deadline 2 s, retry 0.5 s);
# pods are created while both are stopped, both resumed, and once the leader has binds in
# flight it is killed. The standby takes the Lease when it expires and binds the rest: each pod
# bound exactly once (a bind of the dead leader that committed is seen by the standby's watch),
# no node over its allocatable, nothing lost. Prints: pods, bound, binds in flight at the kill,
# over-allocated, double-bound, lost, takeover and recovery seconds. Loopback only; about 40 s.
# (tests/e2e/scheduler_leader_test.sh covers a frozen leader and its stepping down.)
# e2e-run: alone (tests/run.sh runs it with no other test beside it): 400 unconfined pods; checks every node's allocation
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/fault_lib.sh"
cd "$REPO_ROOT" || exit 1

ID=$SCHED_E2E_ID
NS=fault-le-$ID
SCHED=tarema-fl-$ID
N=${FAULT_PODS:-400}
CPU=${FAULT_POD_CPU:-50m}
WORK=$(mktemp -d)
cleanup() {
  for p in "${SCHED_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
  stop_schedulers
  kubectl delete pods --all -n "$NS" --grace-period=0 --force --wait=false >/dev/null 2>&1
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
cat >"$WORK/sched.yaml" <<CFG
schedulerName: $SCHED
namespaces: [$NS]
qps: 0
leaderElection: {enabled: true, namespace: $NS, name: lease-$ID, leaseMs: 3000, renewDeadlineMs: 2000, retryMs: 500}
CFG
start_scheduler "$WORK/a.log" --config "$WORK/sched.yaml" --identity replica-a || { fail "replica a starts" "$(tail -n 5 "$WORK/a.log")"; summary; exit 1; }
PA=$SCHED_PORT PID_A=$SCHED_PID
start_scheduler "$WORK/b.log" --config "$WORK/sched.yaml" --identity replica-b || { fail "replica b starts" "$(tail -n 5 "$WORK/b.log")"; summary; exit 1; }
PB=$SCHED_PORT PID_B=$SCHED_PID
one_leader() { local a b; a=$(metric "$PA" tarema_leader) && b=$(metric "$PB" tarema_leader) && [ "$((a + b))" = 1 ]; }
if wait_for 20 one_leader; then pass "two replicas, exactly one leads"; else fail "exactly one replica leads" "a=$(metric "$PA" tarema_leader) b=$(metric "$PB" tarema_leader)"; fi
kill -STOP "$PID_A" "$PID_B"
pods_json "$NS" p "$N" "$SCHED" "$CPU" 16Mi | jq -s '{apiVersion: "v1", kind: "List", items: .}' >"$WORK/pods.json"
check "$N pods created while both replicas are stopped" kubectl create -f "$WORK/pods.json" -o name
kill -CONT "$PID_A" "$PID_B"
# The fault waits for binds in flight (at most 5 s), and the test fails unless they were: a
# fault after every pod was bound would leave every invariant below holding trivially. Both
# replicas were stopped while the pods were created, which on a loaded machine can outlast the
# 3 s Lease, so the leader is whichever replica leads now with binds in flight, not the one
# that led before.
INFLIGHT="" LEAD_PORT=""
deadline=$(($(date +%s) + 5))
while [ -z "$LEAD_PORT" ] && [ "$(date +%s)" -lt "$deadline" ]; do
  for p in "$PA" "$PB"; do
    [ "$(metric "$p" tarema_leader)" = 1 ] || continue
    f=$(metric "$p" tarema_binds_in_flight) || continue
    INFLIGHT=$f
    [ "${f%.*}" -ge 50 ] 2>/dev/null && LEAD_PORT=$p && break
  done
  [ -n "$LEAD_PORT" ] || sleep 0.05
done
[ -n "$LEAD_PORT" ] || LEAD_PORT=$([ "$(metric "$PA" tarema_leader)" = 1 ] && echo "$PA" || echo "$PB")
if [ "$LEAD_PORT" = "$PA" ]; then
  LEAD_PID=$PID_A STBY_PORT=$PB
else
  LEAD_PID=$PID_B STBY_PORT=$PA
fi
inflight=$INFLIGHT
answered=$(metric "$LEAD_PORT" 'tarema_binds_total{result="ok"}')
# the standby's binds before the kill (none while it does not lead): the baseline of "a bind
# after the kill". Read after its takeover instead, it missed a new leader that bound every pod
# left in the second before (seen once: 73 binds, then none to grow, the check failed)
stby_ok0=$(metric "$STBY_PORT" 'tarema_binds_total{result="ok"}') || stby_ok0=""
kill -KILL "$LEAD_PID"
t_kill=$(now)
echo "# leader killed: $answered binds answered, $inflight in flight"
fault_armed "leader kill" "$inflight" "$answered" "$N"
stby_leads() { [ "$(metric "$STBY_PORT" tarema_leader)" = 1 ]; }
if wait_for 30 stby_leads; then
  takeover=$(secs "$t_kill" "$(now)")
  pass "the standby takes the Lease ${takeover} s after the kill"
else
  takeover=none
  fail "the standby takes over" "tarema_leader=$(metric "$STBY_PORT" tarema_leader)"
fi
fault_recovery "$NS" "$N" "$STBY_PORT" "$t_kill" "the kill" "$stby_ok0"
fault_figures "$NS" "$N" "$CPU" "$STBY_PORT"
fault_checks "leader kill"
echo "# fault figures (leader SIGKILL with binds in flight; Lease 3 s):"
echo "#   pods $N  bound $F_BOUND  in flight at kill $inflight  over-allocated nodes $F_OVER_NODES pods $F_OVER_PODS  double-bound $F_DOUBLE  lost $F_LOST"
echo "#   takeover ${takeover} s, first bind by the new leader ${REC} s, all bound ${REC_ALL} s after the kill"
stop_schedulers
summary
