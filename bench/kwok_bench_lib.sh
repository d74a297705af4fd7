# bench/kwok_bench_lib.sh: what the kwok benchmarks that run tarema-scheduler against the
# cluster's own kube-scheduler on a fresh cluster per run share (bench/preemption_bench.sh,
# bench/scheduler_perf_bench.sh). Sourced after hack/lib.sh with REPO_ROOT as the working
# directory and these set: TAREMA (the binary), QPS and BURST (both schedulers' client budget),
# KEEP (a directory to copy the run's logs to at the end, "" for none). Makes WORK (removed at
# exit, after the schedulers are stopped and the cluster is taken down) and sets TAREMA_PID.
WORK=$(mktemp -d)
TAREMA_PID=
stop_schedulers() {
  if [ -n "$TAREMA_PID" ]; then
    kill "$TAREMA_PID" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$TAREMA_PID" 2>/dev/null || break; sleep 0.1; done
    TAREMA_PID=
  fi
  bash hack/cluster.sh scheduler stop >/dev/null 2>&1 || true
}
cleanup() {
  stop_schedulers
  bash hack/cluster.sh down >/dev/null 2>&1 || true
  [ -n "$KEEP" ] && mkdir -p "$KEEP" && cp -r "$WORK"/. "$KEEP"/
  rm -rf "$WORK"
}
trap cleanup EXIT

cpu_s() { awk -v clk="$CLK" '{printf "%.2f", ($14 + $15) / clk}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

start_kube() {
  bash hack/cluster.sh scheduler start "$WORK/kube-scheduler.yaml" >>"$WORK/kube-scheduler.out" 2>&1 ||
    die "kube-scheduler did not start ($WORK/kube-scheduler.out)"
  cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid"
}

# start_tarema: in the background, until it serves /readyz (its caches synced). Leader election
# off, as the cluster's kube-scheduler runs here (hack/cluster.sh): with it on, an API server
# saturated by a mass preemption let tarema's Lease renewals time out and it stopped scheduling
# for seconds at a time, a cost kube-scheduler did not pay in the same bench.
start_tarema() {
  # shellcheck disable=SC2086 # BENCH_TAREMA_ARGS: words
  "$TAREMA" --scheduler-name tarema --qps "$QPS" --burst "$BURST" --port 0 --log-level info --leader-elect=false \
    ${BENCH_TAREMA_ARGS:-} >"$WORK/tarema.log" 2>&1 &
  TAREMA_PID=$!
  local port=
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$WORK/tarema.log" | head -n 1)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && return 0
    kill -0 "$TAREMA_PID" 2>/dev/null || break
    sleep 0.5
  done
  die "tarema-scheduler did not become ready (log: $WORK/tarema.log)"
}

# kube_ready: kube-scheduler's /healthz answers and it has synced (it binds a probe pod).
kube_ready() {
  local pod
  pod=$(jq -cn '{apiVersion: "v1", kind: "Pod", metadata: {name: "probe", namespace: "default"},
    spec: {terminationGracePeriodSeconds: 0, containers: [{name: "c", image: "busybox",
      resources: {requests: {cpu: "1m", memory: "1Mi"}}}]}}')
  kubectl delete pod -n default probe --wait=true --ignore-not-found >/dev/null 2>&1
  kubectl create -f - <<<"$pod" >/dev/null || return 1
  for _ in $(seq 1 300); do
    [ -n "$(kubectl get pod -n default probe -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ] &&
      { kubectl delete pod -n default probe --wait=true >/dev/null 2>&1; return 0; }
    sleep 0.2
  done
  return 1
}

