#!/usr/bin/env bash
# End-to-end check of hack/cluster.sh's instance lifecycle on a private instance of its own
# (so the shared one tests/run.sh started is never disturbed): `up` next to the running
# instance on other ports, `env`, `status`, an idempotent second `up`, `kill`/`start` of the
# apiserver, etcd and kwok with the cluster working afterwards, `scheduler start|stop` with
# the real kube-scheduler placing a pod, and `down` leaving no process and no state behind.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
KUBECTL=$KUBECTL_BIN
CLUSTER=$REPO_ROOT/hack/cluster.sh
export TAREMA_CLUSTER_NAME=e2e-life-$$
DIR=$TAREMA_CACHE/clusters/$TAREMA_CLUSTER_NAME
SHARED_PORT=${TAREMA_APISERVER_URL##*:}
cl() { bash "$CLUSTER" "$@"; }
cleanup() { cl down >/dev/null 2>&1 || true; }
trap cleanup EXIT

# Processes whose command line names this instance's state dir.
instance_pids() {
  grep -laE -- "=$(printf '%s' "$DIR/" | sed 's#[.]#[.]#g; s#/#[/]#g')" /proc/[0-9]*/cmdline 2>/dev/null | sed 's#^/proc/\([0-9]*\)/cmdline$#\1#' || true
}

t0=$(date +%s.%N)
out=$(cl up --nodes "$REPO_ROOT/tests/fixtures/nodes/small.yaml" 2>&1)
rc=$?
t1=$(date +%s.%N)
if [ $rc != 0 ]; then
  fail "up of a second instance '$TAREMA_CLUSTER_NAME'" "$(tail -n 15 <<<"$out")"
  summary
  exit 1
fi
pass "up of a second instance '$TAREMA_CLUSTER_NAME' ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
for want in "starting etcd" "starting apiserver" "starting controller-manager" "starting kwok" "nodes Ready 3/3"; do
  grep -q "$want" <<<"$out" && pass "up reports '$want'" || fail "up reports '$want'" "$out"
done

env_out=$(cl env)
eval "$env_out"
check "env exports KUBECONFIG, TAREMA_CLUSTER_DIR, TAREMA_APISERVER_URL" bash -c "
  grep -qx 'export KUBECONFIG=$DIR/admin.kubeconfig' <<<'$env_out' &&
  grep -qx 'export TAREMA_CLUSTER_DIR=$DIR' <<<'$env_out' &&
  grep -Eqx 'export TAREMA_APISERVER_URL=https://127.0.0.1:[0-9]+' <<<'$env_out'"
if [ -n "$SHARED_PORT" ] && [ "${TAREMA_APISERVER_URL##*:}" = "$SHARED_PORT" ]; then
  fail "the second instance has its own apiserver port" "both use $SHARED_PORT"
else
  pass "the second instance has its own apiserver port (${TAREMA_APISERVER_URL##*:}, shared instance ${SHARED_PORT:-none})"
fi
check "status exits 0 and shows 3/3 nodes Ready" bash -c "bash '$CLUSTER' status | grep -q 'Ready 3/3'"

t0=$(date +%s.%N)
out=$(cl up --nodes "$REPO_ROOT/tests/fixtures/nodes/small.yaml" 2>&1)
rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
pids_before=$(instance_pids | sort | tr '\n' ' ')
if [ $rc = 0 ] && ! grep -q 'starting' <<<"$out" && grep -q 'already running' <<<"$out"; then
  pass "a second up only verifies the running instance ($took s)"
else
  fail "a second up only verifies the running instance" "$out"
fi

# ---- kill and start: the apiserver comes back on the same port with the same data.
k() { "$KUBECTL" "$@"; }
check "create a ConfigMap before the restart" k create configmap before-restart --from-literal=a=1
check "kill apiserver" cl kill apiserver
if ! k get --raw /readyz >/dev/null 2>&1; then pass "the API is down after kill"; else fail "the API is down after kill"; fi
check "status exits non-zero while the apiserver is down" bash -c "! bash '$CLUSTER' status"
# Down long enough for client-go's reconnect backoff to grow (it reaches tens of seconds): the
# controller-manager must still serve a new namespace at once after `start`.
sleep 10
check "start apiserver" cl start apiserver
check "the API answers again, the ConfigMap is still there" k get configmap before-restart
has_default_sa() { k -n "$1" get serviceaccount default; }
k create namespace after-restart >/dev/null 2>&1
if wait_for 10 has_default_sa after-restart; then
  pass "a namespace created right after the restart gets its default ServiceAccount within 10 s"
else
  fail "a namespace created right after the restart gets its default ServiceAccount within 10 s" "$(tail -n 5 "$DIR/logs/controller-manager.log")"
fi
check "kill etcd" cl kill etcd
check "start etcd" cl start etcd
check "after an etcd restart the API writes again" wait_for 30 k create configmap after-etcd --from-literal=a=1
k create namespace after-etcd >/dev/null 2>&1
if wait_for 10 has_default_sa after-etcd; then
  pass "a namespace created after the etcd restart gets its default ServiceAccount within 10 s"
else
  fail "a namespace created after the etcd restart gets its default ServiceAccount within 10 s" "$(tail -n 5 "$DIR/logs/controller-manager.log")"
fi
check "kill kwok" cl kill kwok
check "start kwok" cl start kwok

# ---- the real kube-scheduler places a pod; kwok runs it.
check "scheduler start" cl scheduler start
check "scheduler start again is a no-op" cl scheduler start
check "status shows the scheduler healthy" bash -c "bash '$CLUSTER' status | grep -Eq 'scheduler +running .*healthy'"
check "create a pod for the default scheduler" k run sched-probe --image=busybox --restart=Never --annotations=tarema.io/duration=30s
running() { [ "$(k get pod sched-probe -o jsonpath='{.status.phase}')" = Running ]; }
if wait_for 30 running; then
  pass "kube-scheduler bound the pod to $(k get pod sched-probe -o jsonpath='{.spec.nodeName}') and kwok runs it"
else
  fail "kube-scheduler bound the pod and kwok runs it" "$(k get pod sched-probe -o wide 2>&1)"
fi
check "the pod avoided the tainted node big-1" bash -c "[ \"\$('$KUBECTL' get pod sched-probe -o jsonpath='{.spec.nodeName}')\" != big-1 ]"
check "scheduler stop" cl scheduler stop
check "status shows the scheduler not running" bash -c "bash '$CLUSTER' status | grep -Eq 'scheduler +not running'"
printf 'kind: KubeSchedulerConfiguration\napiVersion: kubescheduler.config.k8s.io/v1\nprofiles:\n  - schedulerName: e2e-custom\n' >"$DIR/custom.yaml"
check "scheduler start CONFIG with a custom profile" cl scheduler start "$DIR/custom.yaml"
check "k run for the custom scheduler name" k run custom-probe --image=busybox --restart=Never --overrides='{"spec":{"schedulerName":"e2e-custom"}}'
custom_running() { [ "$(k get pod custom-probe -o jsonpath='{.status.phase}')" = Running ]; }
if wait_for 30 custom_running; then pass "the custom profile schedules pods for e2e-custom"; else fail "the custom profile schedules pods for e2e-custom" "$(k get pod custom-probe -o wide 2>&1)"; fi
bad_cfg=$(cl scheduler start /nonexistent.yaml 2>&1)
if [ $? != 0 ]; then pass "scheduler start refuses a second scheduler: $bad_cfg"; else fail "scheduler start refuses while running"; fi
check "scheduler stop" cl scheduler stop
printf 'kind: Nonsense\n' >"$DIR/bad.yaml"
msg=$(cl scheduler start "$DIR/bad.yaml" 2>&1)
if [ $? != 0 ] && grep -q 'not a KubeSchedulerConfiguration' <<<"$msg"; then pass "a config that is not a KubeSchedulerConfiguration is refused"; else fail "a bad scheduler config is refused" "$msg"; fi

# ---- down: no process, no state.
check "down" cl down
left=$(instance_pids | tr '\n' ' ')
if [ -z "$left" ]; then pass "down leaves no process of the instance (were: $pids_before)"; else fail "down leaves no process" "still running: $left"; fi
if [ ! -e "$DIR" ]; then pass "down removes $DIR"; else fail "down removes $DIR" "$(ls "$DIR")"; fi
check "down of an instance that is not up succeeds" cl down
msg=$(cl env 2>&1)
if [ $? != 0 ] && grep -q "no cluster instance '$TAREMA_CLUSTER_NAME'" <<<"$msg"; then pass "env of a missing instance says so"; else fail "env of a missing instance says so" "$msg"; fi

summary
