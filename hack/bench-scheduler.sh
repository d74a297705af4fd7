#!/usr/bin/env bash
# hack/bench-scheduler.sh: tarema-scheduler against the real kube-scheduler on a dedicated kwok
# cluster: same nodes, same pods, same client QPS budget. For each scale NODES:PODS it brings up
# a cluster instance with NODES heterogeneous nodes (four machine types with tarema labels), then
#   1. runs kube-scheduler (clientConnection.qps/burst = tarema's --qps/--burst), creates PODS
#      pods for it (bench/scheduler_live_bench), measures;
#   2. stops it and runs tarema-scheduler on the same cluster (kube-scheduler's pods still there),
#      creates the same PODS pods for it, measures;
# and prints a table: pods/s (bound / time from the first create to the last bind), p50/p99 of
# creation -> bind as the watch sees it, the scheduler's CPU seconds during the run (utime+stime
# from /proc/PID/stat) and its peak RSS (VmHWM). Nothing is asserted: figures are for people.
#
#   BENCH_SCALES="500:5000 5000:10000"  scales to run (default both)
#   BENCH_QPS=1000 BENCH_BURST=2000     client budget of both schedulers
#   BENCH_CLUSTER_NAME=bench-sched      cluster instance (torn down at the end)
#   O=build BINDIR=bin                  where the binaries are (make O=... BINDIR=...)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
O=${O:-build}
BINDIR=${BINDIR:-bin}
SCALES=${BENCH_SCALES:-500:5000 5000:10000}
QPS=${BENCH_QPS:-1000}
BURST=${BENCH_BURST:-2000}
export TAREMA_CLUSTER_NAME=${BENCH_CLUSTER_NAME:-bench-sched}
DRIVER=$O/bench/scheduler_live_bench
TAREMA=$BINDIR/tarema-scheduler
[ -x "$DRIVER" ] || die "$DRIVER not built: run make O=$O BINDIR=$BINDIR first"
[ -x "$TAREMA" ] || die "$TAREMA not built: run make O=$O BINDIR=$BINDIR first"
WORK=$(mktemp -d)
TAREMA_PID=
CLK=$(getconf CLK_TCK)

cleanup() {
  [ -n "$TAREMA_PID" ] && kill "$TAREMA_PID" 2>/dev/null && wait "$TAREMA_PID" 2>/dev/null
  bash hack/cluster.sh scheduler stop >/dev/null 2>&1 || true
  bash hack/cluster.sh down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# nodes_file N: N nodes of the paper's four machine types (5:4:4:2), tarema-labelled by type.
nodes_file() {
  local n=$1 e2 n1 n2 c2
  e2=$((n * 5 / 15)); n1=$((n * 4 / 15)); n2=$((n * 4 / 15)); c2=$((n - e2 - n1 - n2))
  cat <<EOF
nodes:
  - {prefix: e2, count: $e2, cpu: 6, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "1", tarema.io/mem: "1", tarema.io/io: "1", tarema.io/group: e2}}
  - {prefix: n1, count: $n1, cpu: 6, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "1", tarema.io/io: "2", tarema.io/group: n1}}
  - {prefix: n2, count: $n2, cpu: 8, memory: 32Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: n2}}
  - {prefix: c2, count: $c2, cpu: 16, memory: 64Gi, pods: 110,
     labels: {tarema.io/cpu: "3", tarema.io/mem: "3", tarema.io/io: "3", tarema.io/group: c2}}
EOF
}

cpu_s() { awk -v clk="$CLK" '{printf "%.2f", ($14 + $15) / clk}' "/proc/$1/stat"; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# measure LABEL PID SCHEDULER_NAME NAMESPACE PODS: one row of the table.
measure() {
  local label=$1 pid=$2 sched=$3 ns=$4 pods=$5 c0 c1 out
  c0=$(cpu_s "$pid")
  out=$("$DRIVER" --namespace "$ns" --scheduler-name "$sched" --pods "$pods" --timeout-s 900) ||
    step "$label: not every pod was bound ($out)"
  c1=$(cpu_s "$pid")
  local hwm
  hwm=$(hwm_mb "$pid")
  step "$label: $out cpu_s=$(echo "$c1 - $c0" | bc) peak_rss_mb=$hwm"
  # shellcheck disable=SC2001
  printf '%-16s %s cpu_s=%s peak_rss_mb=%s\n' "$label" "$out" "$(echo "$c1 - $c0" | bc)" "$hwm" >>"$WORK/rows"
}

: >"$WORK/rows"
for scale in $SCALES; do
  nodes=${scale%%:*}
  pods=${scale##*:}
  step "scale $nodes nodes / $pods pods: cluster '$TAREMA_CLUSTER_NAME'"
  nodes_file "$nodes" >"$WORK/nodes.yaml"
  # kwok readies a few dozen nodes a second on a busy machine: 5,000 take minutes.
  TAREMA_START_TIMEOUT=${TAREMA_START_TIMEOUT:-900} bash hack/cluster.sh up --nodes "$WORK/nodes.yaml" ||
    die "cluster did not come up"
  eval "$(bash hack/cluster.sh env)"

  # ---- kube-scheduler, with the same client budget
  cat >"$WORK/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: $QPS, burst: $BURST}
EOF
  bash hack/cluster.sh scheduler start "$WORK/kube-scheduler.yaml" || die "kube-scheduler did not start"
  ks_pid=$(cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid")
  sleep 3 # its informers list the nodes after /healthz already answers
  measure "kube-scheduler" "$ks_pid" default-scheduler bench-kube "$pods"
  bash hack/cluster.sh scheduler stop

  # ---- tarema-scheduler, second: kube-scheduler's pods stay (deleting thousands of pods takes
  # minutes here), so tarema runs with the fuller cluster and cache, never the other way round.
  "$TAREMA" --scheduler-name tarema --qps "$QPS" --burst "$BURST" --port 0 --log-level info \
    >"$WORK/tarema.log" 2>&1 &
  TAREMA_PID=$!
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$WORK/tarema.log" | head -n 1)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 0.5
  done
  measure "tarema" "$TAREMA_PID" tarema bench-tarema "$pods"
  step "tarema: its pod watch ended early $(grep -c 'watch failed path=/api/v1/pods' "$WORK/tarema.log") time(s)"
  kill "$TAREMA_PID"
  wait "$TAREMA_PID" 2>/dev/null
  TAREMA_PID=

  sed "s/^/$nodes nodes  /" "$WORK/rows" >>"$WORK/table"
  : >"$WORK/rows"
  bash hack/cluster.sh down
done

echo
echo "scheduler-live: same kwok cluster, same pods, client qps=$QPS burst=$BURST"
printf '%-12s %-16s %9s %9s %9s %8s %12s\n' scale scheduler pods/s p50_ms p99_ms cpu_s peak_rss_mb
awk '{
  split("", f); for (i = 4; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  printf "%-12s %-16s %9s %9s %9s %8s %12s\n", $1 " nodes", $3, f["pods_per_s"], f["p50_ms"], f["p99_ms"], f["cpu_s"], f["peak_rss_mb"]
}' "$WORK/table"
