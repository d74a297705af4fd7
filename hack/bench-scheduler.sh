#!/usr/bin/env bash
# hack/bench-scheduler.sh: tarema-scheduler against the real kube-scheduler on a dedicated kwok
# cluster: same nodes, same pods, same client QPS budget. For each scale NODES:PODS it brings up
# a cluster instance with NODES heterogeneous nodes (four machine types with tarema labels) and
# measures both schedulers in two modes (bench/scheduler_live_bench.c says more):
#   streaming  the scheduler runs while PODS pods are created: latency from creation to bind as a
#              user sees it; throughput is bounded by how fast the API server takes creates
#   backlog    PODS pods are created first, then the scheduler is started: its own throughput
#              (start, informer sync, binding) against a full queue
# Every run gets a new namespace and a freshly started scheduler. Pods stay (deleting thousands
# takes minutes here), so later runs see a fuller cluster: the order alternates per round (A B,
# then B A, ...) so that this drift does not favour either scheduler, and the summary gives each
# figure's median over the rounds. Per run: pods/s (bound / first create .. last bind; backlog:
# bound / scheduler start .. last bind), p50/p99 creation -> bind as a watch sees it, the
# scheduler's CPU seconds (utime+stime; streaming: during the run, backlog: its whole life) and
# its peak RSS (VmHWM). Nothing is asserted: figures are for people.
#
#   BENCH_SCALES="500:5000 5000:10000"  scales to run (default both)
#   BENCH_MODES="streaming backlog"     modes (default both)
#   BENCH_ROUNDS=2                      runs of each scheduler per mode and scale
#   BENCH_QPS=1000 BENCH_BURST=2000     client budget of both schedulers
#   BENCH_CLUSTER_NAME=bench-sched      cluster instance (torn down at the end)
#   BENCH_SCHEDULERS="tarema kube-scheduler"  which schedulers run (default both)
#   BENCH_TAREMA_ARGS="..."             more tarema-scheduler flags (e.g. --config FILE with
#                                       backfill: {reserveDepth: 10}); the backfill planner's
#                                       plans and mean plan time are read from its /metrics
#   BENCH_PROFILE=DIR                   also samples tarema-scheduler's CPU with perf (cpu-clock,
#                                       249 Hz, call stacks, attached once it started) into DIR, one
#                                       perf.data per run, and prints each run's top functions
#   O=build BINDIR=bin                  where the binaries are (make O=... BINDIR=...)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
O=${O:-build}
BINDIR=${BINDIR:-bin}
SCALES=${BENCH_SCALES:-500:5000 5000:10000}
MODES=${BENCH_MODES:-streaming backlog}
WHO=${BENCH_SCHEDULERS:-tarema kube-scheduler}
PROFILE=${BENCH_PROFILE:-}
ROUNDS=${BENCH_ROUNDS:-2}
QPS=${BENCH_QPS:-1000}
BURST=${BENCH_BURST:-2000}
export TAREMA_CLUSTER_NAME=${BENCH_CLUSTER_NAME:-bench-sched}
DRIVER=$O/bench/scheduler_live_bench
TAREMA=$BINDIR/tarema-scheduler
[ -x "$DRIVER" ] || die "$DRIVER not built: run make O=$O BINDIR=$BINDIR first"
[ -x "$TAREMA" ] || die "$TAREMA not built: run make O=$O BINDIR=$BINDIR first"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive integer, not '$ROUNDS'"
for m in $MODES; do
  [ "$m" = streaming ] || [ "$m" = backlog ] || die "BENCH_MODES: unknown mode '$m' (streaming, backlog)"
done
for w in $WHO; do
  [ "$w" = tarema ] || [ "$w" = kube-scheduler ] ||
    die "BENCH_SCHEDULERS: unknown scheduler '$w' (tarema, kube-scheduler)"
done
if [ -n "$PROFILE" ]; then
  command -v perf >/dev/null || die "BENCH_PROFILE needs perf (Debian: linux-perf)"
  mkdir -p "$PROFILE" || die "BENCH_PROFILE: cannot create $PROFILE"
  PROFILE=$(cd "$PROFILE" && pwd)
fi
WORK=$(mktemp -d)
CLK=$(getconf CLK_TCK)
# 50m per pod: eight runs of 5,000 pods fit on 500 nodes (110 pods each) with room to spare.
POD_CPU=50m
POD_MEM=64Mi

stop_schedulers() {
  if [ -s "$WORK/tarema.pid" ]; then
    kill "$(cat "$WORK/tarema.pid")" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$(cat "$WORK/tarema.pid")" 2>/dev/null || break; sleep 0.1; done
    : >"$WORK/tarema.pid"
  fi
  if [ -s "$WORK/perf.pid" ]; then # perf ends with its target; waited for so its file is whole
    for _ in $(seq 1 100); do kill -0 "$(cat "$WORK/perf.pid")" 2>/dev/null || break; sleep 0.1; done
    kill -INT "$(cat "$WORK/perf.pid")" 2>/dev/null
    : >"$WORK/perf.pid"
  fi
  bash hack/cluster.sh scheduler stop >/dev/null 2>&1 || true
}

cleanup() {
  stop_schedulers
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

cpu_s() { awk -v clk="$CLK" '{printf "%.2f", ($14 + $15) / clk}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

# Commands that start each scheduler in the background, leaving its pid in a file.
start_kube_cmd() {
  echo "bash hack/cluster.sh scheduler start '$WORK/kube-scheduler.yaml' >>'$WORK/kube-scheduler.out' 2>&1 && cp '$TAREMA_CLUSTER_DIR/run/scheduler.pid' '$WORK/kube.pid'"
}
start_tarema_cmd() {
  # leader election off, as the cluster's kube-scheduler (bench/kwok_bench_lib.sh, start_tarema)
  local c="'$TAREMA' --scheduler-name tarema --qps $QPS --burst $BURST --port 0 --log-level info --leader-elect=false ${BENCH_TAREMA_ARGS:-} >'$WORK/tarema.log' 2>&1 & echo \$! >'$WORK/tarema.pid'"
  # profiled: perf attaches to the running scheduler (its pid stays the scheduler's, so the CPU
  # and RSS figures stay the scheduler's own) and stops when it exits
  [ -z "$PROFILE" ] ||
    c="$c; perf record -q -e cpu-clock -F 249 --call-graph dwarf,8192 -o '$PROFILE/$1.data' -p \$(cat '$WORK/tarema.pid') >'$PROFILE/$1.log' 2>&1 & echo \$! >'$WORK/perf.pid'"
  echo "$c"
}

# wait_ready WHO: until the scheduler just started in the background serves (streaming mode).
wait_ready() {
  if [ "$1" = kube-scheduler ]; then
    sleep 3 # its informers list the nodes after /healthz already answers
    return
  fi
  local port=
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$WORK/tarema.log" | head -n 1)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && return
    sleep 0.5
  done
  die "tarema-scheduler did not become ready (log: $WORK/tarema.log)"
}

# run_one SCALE MODE WHO ROUND PODS: one measured run, one line in $WORK/rows.
run_one() {
  local scale=$1 mode=$2 who=$3 round=$4 pods=$5 ns sched cmd pid c0=0 out rc
  ns="b-$mode-${who%%-*}-$round"
  if [ "$who" = kube-scheduler ]; then sched=default-scheduler; cmd=$(start_kube_cmd); else sched=tarema; cmd=$(start_tarema_cmd "$scale-$mode-$round"); fi
  : >"$WORK/kube.pid"
  : >"$WORK/tarema.pid"
  local args=(--namespace "$ns" --scheduler-name "$sched" --pods "$pods" --cpu "$POD_CPU"
    --memory "$POD_MEM" --timeout-s 900)
  if [ "$mode" = streaming ]; then
    bash -c "$cmd" || die "$who did not start"
    wait_ready "$who"
    pid=$(cat "$WORK/${who%%-*}.pid")
    c0=$(cpu_s "$pid")
    out=$("$DRIVER" "${args[@]}" 2>>"$WORK/driver.err"); rc=$?
  else
    out=$("$DRIVER" "${args[@]}" --then "$cmd" 2>>"$WORK/driver.err"); rc=$?
    pid=$(cat "$WORK/${who%%-*}.pid")
  fi
  [ $rc -eq 0 ] || step "$scale $mode $who: not every pod was bound ($out; see $WORK/driver.err)"
  local c1 hwm
  c1=$(cpu_s "$pid")
  hwm=$(hwm_mb "$pid")
  out="$out cpu_s=$(echo "$c1 - $c0" | bc) peak_rss_mb=$hwm"
  if [ "$who" = tarema ]; then # the backfill planner's work (issue 32): plans and mean plan time
    local port
    port=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$WORK/tarema.log" | head -n 1)
    [ -n "$port" ] && out="$out $(curl -sf "http://127.0.0.1:$port/metrics" | awk '
      /^tarema_backfill_plan_duration_seconds_sum / {s = $2}
      /^tarema_backfill_plan_duration_seconds_count / {n = $2}
      END {printf "plans=%d plan_ms=%.1f", n, n ? 1000 * s / n : 0}')"
  fi
  step "$scale $mode round $round $who: $out"
  echo "$scale $mode $who $round $out" >>"$WORK/rows"
  if [ "$who" = tarema ] && [ -s "$WORK/tarema.log" ]; then
    local n
    n=$(grep -c 'watch failed path=/api/v1/pods' "$WORK/tarema.log")
    [ "$n" = 0 ] || step "tarema: its pod watch ended early $n time(s)"
  fi
  stop_schedulers
  if [ "$who" = tarema ] && [ -n "$PROFILE" ] && [ -s "$PROFILE/$scale-$mode-$round.data" ]; then
    step "tarema's top functions ($PROFILE/$scale-$mode-$round.data; perf report -i it for more):"
    perf report -i "$PROFILE/$scale-$mode-$round.data" --stdio --no-children --sort dso,symbol -g none 2>/dev/null |
      grep -E '^ +[0-9]' | head -n 25
  fi
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
  # As deployed: with the TaskProfile CRD (tarema waits a grace period for it otherwise).
  kubectl apply -f charts/tarema/crds/taskprofile.yaml >/dev/null ||
    die "cannot install the TaskProfile CRD"
  cat >"$WORK/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: $QPS, burst: $BURST}
EOF
  total=$(( $(echo "$MODES" | wc -w) * ROUNDS * $(echo "$WHO" | wc -w) ))
  i=0
  for mode in $MODES; do
    for round in $(seq 1 "$ROUNDS"); do
      if [ $((round % 2)) = 1 ]; then order="tarema kube-scheduler"; else order="kube-scheduler tarema"; fi
      for who in $order; do
        [[ " $WHO " == *" $who "* ]] || continue
        i=$((i + 1))
        step "run $i/$total: $nodes nodes, $mode, round $round, $who"
        run_one "${nodes}n" "$mode" "$who" "$round" "$pods"
      done
    done
  done
  bash hack/cluster.sh down
done

echo
echo "scheduler-live: same kwok cluster, same pods, client qps=$QPS burst=$BURST; every run:"
cat "$WORK/rows"
echo
echo "medians over $ROUNDS round(s) per scheduler (pods/s: streaming from the first create, backlog from the scheduler's start):"
printf '%-7s %-10s %-15s %9s %9s %9s %8s %12s %8s\n' scale mode scheduler pods/s p50_ms p99_ms cpu_s peak_rss_mb plan_ms
awk '
function median(key,   n, i, j, t, a) {
  n = split(vals[key], a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
  id = $1 " " $2 " " $3
  if (!(id in seen)) { seen[id] = 1; order[++nid] = id }
  for (i = 5; i <= NF; i++) {
    split($i, kv, "=")
    f = kv[1]
    if (f == "pods_per_s" && $2 == "backlog") continue
    if (f == "backlog_pods_per_s") f = "pods_per_s"
    vals[id SUBSEP f] = vals[id SUBSEP f] " " kv[2]
  }
}
END {
  for (k = 1; k <= nid; k++) {
    id = order[k]; split(id, p, " ")
    printf "%-7s %-10s %-15s %9.1f %9.0f %9.0f %8.2f %12.0f %8s\n", p[1], p[2], p[3],
      median(id SUBSEP "pods_per_s"), median(id SUBSEP "p50_ms"), median(id SUBSEP "p99_ms"),
      median(id SUBSEP "cpu_s"), median(id SUBSEP "peak_rss_mb"),
      (id SUBSEP "plan_ms") in vals ? sprintf("%.1f", median(id SUBSEP "plan_ms")) : "-"
  }
}' "$WORK/rows"
