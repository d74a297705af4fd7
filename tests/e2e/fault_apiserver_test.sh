#!/usr/bin/env bash
# Fault test: kube-apiserver SIGKILLed with binds in flight (issue 13, defects 2 and 11).
# As the issue reproduced it: pods created while tarema-scheduler is stopped (SIGSTOP) on more
# than the cluster's capacity, the scheduler resumed, and kube-apiserver killed -9 one second
# later (hack/cluster.sh kill apiserver), then started again. A bind whose answer was lost may
# have committed: the scheduler must keep that capacity reserved until it reads the pod back.
# Before the fix it freed it at once and reused it (1,131 pods on capacity for 1,080).
# Checks: no node over its allocatable, no pod bound twice, no pod lost (every unbound pod is
# still queued), binding resumes within 5 s of the API server answering again or 2 s of its
# readiness (before: up to the 10 s watch backoff). Prints: pods, bound, binds in flight at the kill, outcomes read back,
# over-allocated nodes/pods, double-bound, lost, recovery seconds. About a minute on 2 cores.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): kills the shared kube-apiserver; fills every untainted node
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/fault_lib.sh"
cd "$REPO_ROOT" || exit 1

ID=$SCHED_E2E_ID
NS=fault-api-$ID
SCHED=tarema-fa-$ID
N=${FAULT_PODS:-650}    # pods of CPU each: more than the 15 paper nodes' 118 cores hold
CPU=${FAULT_POD_CPU:-200m}
KILL_INFLIGHT=${KILL_INFLIGHT:-300} # kill once this many binds are in flight (or after 5 s)
WORK=$(mktemp -d)
cleanup() {
  for p in "${SCHED_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; done
  stop_schedulers
  bash hack/cluster.sh status >/dev/null 2>&1 || bash hack/cluster.sh start apiserver >/dev/null 2>&1
  # The pods fill the cluster: free it before the next test (no kubelet to wait for).
  kubectl delete pods --all -n "$NS" --grace-period=0 --force --wait=false >/dev/null 2>&1
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  [ -n "${KEEP_WORK:-}" ] && echo "# kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" --namespaces "$NS" --qps 0 ||
  { fail "scheduler starts" "$(tail -n 5 "$WORK/sched.log")"; summary; exit 1; }
PORT=$SCHED_PORT PID=$SCHED_PID
pass "scheduler starts"

kill -STOP "$PID"
pods_json "$NS" p "$N" "$SCHED" "$CPU" 16Mi | jq -s '{apiVersion: "v1", kind: "List", items: .}' >"$WORK/pods.json"
check "$N pods created while the scheduler is stopped" kubectl create -f "$WORK/pods.json" -o name
kill -CONT "$PID"
t_cont=$(now)
# The issue killed 1 s after resuming; on a busy 2-core host the scheduler may still be reading
# the backlog then, so the kill waits for binds in flight instead (at most 5 s).
for _ in $(seq 1 100); do
  inflight=$(metric "$PORT" tarema_binds_in_flight)
  [ "${inflight%.*}" -ge "$KILL_INFLIGHT" ] && break
  sleep 0.05
done
bound_before=$(metric "$PORT" 'tarema_binds_total{result="ok"}')
bash hack/cluster.sh kill apiserver >"$WORK/kill.log" 2>&1
KILL_AFTER=$(secs "$t_cont" "$(now)")
echo "# killed kube-apiserver ${KILL_AFTER} s after resuming: $bound_before binds answered, $inflight in flight"
[ "${inflight%.*}" -gt 0 ] && pass "binds were in flight at the kill ($inflight)" || fail "binds in flight at the kill" "none: the scheduler was done already ($bound_before bound); raise FAULT_PODS"
sleep 2
# The start command also restarts kube-scheduler and the controller-manager. The API server
# answers (any HTTP status) seconds before /readyz turns 200, while it still runs its post-start
# hooks and serves slowly. Recovery is the time from its first answer to the scheduler's next
# successful bind; that and /readyz are both polled here and printed.
bash hack/cluster.sh start apiserver >"$WORK/start.log" 2>&1 &
start_pid=$!
api=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
pki=$TAREMA_CLUSTER_DIR/pki
code_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 1 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$api/$1" 2>/dev/null; }
t_up= t_ready= t_bind= ok_up=
for _ in $(seq 1 1200); do
  if [ -z "$t_up" ]; then
    code=$(code_of healthz)
    [ "${code:-000}" != 000 ] && t_up=$(now) ok_up=$(metric "$PORT" 'tarema_binds_total{result="ok"}')
  fi
  if [ -n "$t_up" ] && [ -z "$t_ready" ] && [ "$(code_of readyz)" = 200 ]; then t_ready=$(now); fi
  if [ -n "$t_up" ] && [ -z "$t_bind" ]; then
    ok=$(metric "$PORT" 'tarema_binds_total{result="ok"}')
    [ "${ok%.*}" -gt "${ok_up%.*}" ] && t_bind=$(now)
  fi
  [ -n "$t_ready" ] && [ -n "$t_bind" ] && break
  sleep 0.05
done
[ -n "$t_up" ] && pass "kube-apiserver answers again" || fail "kube-apiserver answers again" "$(tail -n 5 "$WORK/start.log")"
if [ -n "$t_bind" ] && [ -n "$t_ready" ]; then
  rec=$(secs "$t_up" "$t_bind") up_ready=$(secs "$t_up" "$t_ready")
  after_ready=$(awk -v r="$t_ready" -v b="$t_bind" 'BEGIN {d = b - r; if (d < 0) d = 0; printf "%.1f", d}')
  echo "# API server: first answer -> ready ${up_ready} s; first answer -> next bind ${rec} s (${after_ready} s after ready)"
  # Within 5 s of the first answer, or within 2 s of /readyz when the server itself took longer
  # to serve (a 2-core host shared with etcd and the restarted kube-scheduler and
  # controller-manager). The regression this guards against (waiting out the 10 s watch
  # backoff; 8.6 s in issue 13) stays above both.
  awk -v r="$rec" -v a="$after_ready" 'BEGIN {exit !(r <= 5.0 || a <= 2.0)}' &&
    pass "binding resumes ${rec} s after the API server answers (<= 5 s; ${after_ready} s after it is ready)" ||
    fail "binding resumes within 5 s of the API server's first answer or 2 s of its readiness" "${rec} s, ${after_ready} s after ready"
else
  rec=none
  fail "binding resumes after the restart" "bind ${t_bind:-none}, ready ${t_ready:-never} within 60 s of the API server's first answer"
fi

wait "$start_pid" || fail "hack/cluster.sh start apiserver" "$(tail -n 5 "$WORK/start.log")"

# Settled: nothing in flight, the queue holds only what does not fit.
settled() { [ "$(metric "$PORT" tarema_binds_in_flight)" = 0 ] && [ "$(metric "$PORT" 'tarema_pending_pods{queue="active"}')" = 0 ] && [ "$(metric "$PORT" 'tarema_pending_pods{queue="backoff"}')" = 0 ]; }
wait_for 60 settled || fail "scheduler settles" "in flight $(metric "$PORT" tarema_binds_in_flight), active $(metric "$PORT" 'tarema_pending_pods{queue="active"}'), backoff $(metric "$PORT" 'tarema_pending_pods{queue="backoff"}')"
sleep 1
fault_figures "$NS" "$N" "$CPU" "$PORT"
unknown=$(grep -c 'bind outcome unknown, node capacity stays reserved' "$WORK/sched.log" || true)
resolved_bound=$(grep -c 'bind outcome resolved: bound ' "$WORK/sched.log" || true)

fault_checks "apiserver kill"
[ "$F_BOUND" -lt "$N" ] && pass "the cluster was full: $F_BOUND of $N pods fit" || fail "the test filled the cluster" "all $N bound: raise FAULT_PODS"

echo "# fault figures (kube-apiserver kill -9 ${KILL_AFTER} s after resuming the scheduler):"
echo "#   pods $N  bound $F_BOUND  in flight at kill $inflight  outcomes unknown $unknown (read back bound $resolved_bound)"
echo "#   over-allocated nodes $F_OVER_NODES pods $F_OVER_PODS  double-bound $F_DOUBLE  lost $F_LOST  recovery ${rec} s (first answer of the API server -> next bind)"
stop_schedulers
summary
