#!/usr/bin/env bash
# bench/informer_sync_bench.sh: how long tarema-scheduler takes from its start to a synced
# cache, and what that costs, on a large cluster full of other schedulers' pods (issue 33's
# target: 5,000 nodes and 50,000 pods in under 3 s, peak RSS under 100 MB). Run by `make bench`.
#
# One kwok cluster of NODES nodes; PODS pods of another scheduler are created, already placed
# on the nodes (spec.nodeName, round robin: what a scheduler restarting on a busy cluster finds;
# every one is listed and kept, as it holds capacity), or with BENCH_SYNC_BOUND=0 left Pending
# (listed, then dropped: another scheduler's pending pod holds nothing); then
# tarema-scheduler is started ROUNDS times per wire encoding, alternating protobuf and JSON
# (--api-content-type), each time until its log says `cache synced`. Per run: seconds from the
# process start to that line (the log's own timestamps), the process's CPU seconds and peak RSS
# (VmHWM) at that moment, and the kube-apiserver's CPU seconds over the same span (what the
# encoding costs the server). Nothing is asserted about speed; exit status 1 when a run could
# not be made.
#
#   BENCH_SYNC_NODES=5000 BENCH_SYNC_PODS=50000   the cluster
#   BENCH_SYNC_ROUNDS=2                           runs per encoding
#   BENCH_SYNC_BOUND=1                            the pods placed (1) or Pending (0)
#   BENCH_SYNC_ARGS="..."                         more tarema-scheduler flags for every run
#   BENCH_SYNC_BASELINE=PATH                      also run this tarema-scheduler binary (an
#                                                 older build, with its own defaults), as "baseline"
#   BENCH_SYNC_CLUSTER_NAME=bench-sync            cluster instance (torn down at the end)
#   BENCH_SYNC_KEEP=DIR                           keep the logs in DIR
#   BENCH=name, BENCH_LIVE=0                      as in hack/bench.sh ("informer"; skip live ones)
#   O=build BINDIR=bin                            where the binaries are
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../hack/lib.sh"
cd "$REPO_ROOT"
if [ -n "${BENCH:-}" ] && [[ informer_sync_bench != *"$BENCH"* ]]; then exit 0; fi
if [ "${BENCH_LIVE:-1}" = 0 ]; then
  step "benchmark informer-sync: skipped (BENCH_LIVE=0)"
  exit 0
fi
O=${O:-build}
BINDIR=${BINDIR:-bin}
NODES=${BENCH_SYNC_NODES:-5000}
PODS=${BENCH_SYNC_PODS:-50000}
ROUNDS=${BENCH_SYNC_ROUNDS:-2}
BOUND=${BENCH_SYNC_BOUND:-1}
export TAREMA_CLUSTER_NAME=${BENCH_SYNC_CLUSTER_NAME:-bench-sync}
DRIVER=$O/bench/scheduler_live_bench
TAREMA=$BINDIR/tarema-scheduler
CLK=$(getconf CLK_TCK)
[ -x "$DRIVER" ] || die "$DRIVER not built: run make O=$O BINDIR=$BINDIR first"
[ -x "$TAREMA" ] || die "$TAREMA not built: run make O=$O BINDIR=$BINDIR first"
for v in NODES PODS ROUNDS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "BENCH_SYNC_$v must be a positive integer, not '${!v}'"
done

WORK=$(mktemp -d)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null
  bash hack/cluster.sh down >/dev/null 2>&1 || true
  [ -n "${BENCH_SYNC_KEEP:-}" ] && mkdir -p "$BENCH_SYNC_KEEP" && cp -r "$WORK"/. "$BENCH_SYNC_KEEP"/
  rm -rf "$WORK"
}
trap cleanup EXIT

cpu_s() { awk -v clk="$CLK" '{printf "%.2f", ($14 + $15) / clk}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
# epoch seconds of an ISO-8601 UTC log timestamp (2026-11-30T01:02:03.456Z)
log_epoch() { date -u -d "$(sed 's/Z$//; s/T/ /' <<<"$1")" +%s.%N; }

cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: node, count: $NODES, cpu: 8, memory: 32Gi, pods: 110}
EOF
step "informer-sync: a cluster of $NODES kwok nodes ('$TAREMA_CLUSTER_NAME')"
TAREMA_START_TIMEOUT=${TAREMA_START_TIMEOUT:-900} bash hack/cluster.sh up --nodes "$WORK/nodes.yaml" \
  >>"$WORK/cluster.out" 2>&1 || die "cluster did not come up ($WORK/cluster.out)"
eval "$(bash hack/cluster.sh env)"
kubectl apply -f charts/tarema/crds/taskprofile.yaml >/dev/null || die "cannot install the TaskProfile CRD"
APISERVER_PID=$(cat "$TAREMA_CLUSTER_DIR/run/apiserver.pid" 2>/dev/null) ||
  die "no kube-apiserver pid in $TAREMA_CLUSTER_DIR/run"

if [ "$BOUND" = 1 ]; then
  step "informer-sync: creating $PODS pods of another scheduler, placed on the nodes"
  "$DRIVER" --namespace sync --scheduler-name not-tarema --pods "$PODS" --cpu 10m --memory 16Mi \
    --timeout-s 3600 --bound-to "node:$NODES" >"$WORK/create.out" 2>&1 ||
    die "the pods were not created ($WORK/create.out)"
  step "$(grep -o 'bound=[0-9]* create_s=[0-9.]*' "$WORK/create.out")"
  KIND=placed
else
  step "informer-sync: creating $PODS pods of another scheduler (they stay Pending)"
  "$DRIVER" --namespace sync --scheduler-name not-tarema --pods "$PODS" --cpu 10m --memory 16Mi \
    --timeout-s 3600 --then false >"$WORK/create.out" 2>&1
  grep -q "pods created" "$WORK/create.out" || die "the pods were not created ($WORK/create.out)"
  step "$(grep -o '[0-9]* pods created in [0-9.]* s' "$WORK/create.out")"
  KIND=pending
fi

: >"$WORK/rows"
i=0
BASELINE=${BENCH_SYNC_BASELINE:-}
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || die "BENCH_SYNC_BASELINE: '$BASELINE' is not an executable"
ENCS="protobuf json${BASELINE:+ baseline}"
runs=$((ROUNDS * $(wc -w <<<"$ENCS")))
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order=$ENCS; else order=$(tr ' ' '\n' <<<"$ENCS" | tac | tr '\n' ' '); fi
  for enc in $order; do
    i=$((i + 1))
    log="$WORK/tarema-$enc-$round.log"
    a0=$(cpu_s "$APISERVER_PID")
    t0=$(date -u +%s.%N)
    if [ "$enc" = baseline ]; then cmd=("$BASELINE"); else cmd=("$TAREMA" --api-content-type "$enc"); fi
    # shellcheck disable=SC2086 # BENCH_SYNC_ARGS: words
    "${cmd[@]}" --scheduler-name tarema --port 0 --log-level info --leader-elect=false \
      ${BENCH_SYNC_ARGS:-} >"$log" 2>&1 &
    PID=$!
    line=
    for _ in $(seq 1 3000); do
      line=$(grep -m1 'cache synced' "$log")
      [ -n "$line" ] && break
      kill -0 "$PID" 2>/dev/null || break
      sleep 0.1
    done
    [ -n "$line" ] || die "tarema-scheduler ($enc) did not sync (log: $log)"
    cpu=$(cpu_s "$PID")
    hwm=$(hwm_mb "$PID")
    a1=$(cpu_s "$APISERVER_PID")
    t1=$(log_epoch "$(awk '{print $1}' <<<"$line")")
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=
    row="encoding=$enc round=$round sync_s=$(echo "$t1 - $t0" | bc | sed 's/^\./0./') cpu_s=$cpu peak_rss_mb=$hwm apiserver_cpu_s=$(echo "$a1 - $a0" | bc | sed 's/^\./0./') $(grep -o 'pods=[0-9]* pending=[0-9]*' <<<"$line")"
    step "run $i/$runs: $row"
    echo "$row" >>"$WORK/rows"
  done
done

echo
echo "informer-sync: $NODES nodes, $PODS $KIND pods of another scheduler; medians of $ROUNDS run(s):"
printf '%-9s %8s %8s %12s %16s\n' encoding sync_s cpu_s peak_rss_mb apiserver_cpu_s
for enc in $ENCS; do
  awk -v enc="$enc" '
  function median(f,   n, i, j, t, a) {
    n = split(vals[f], a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  $1 == "encoding=" enc { for (i = 3; i <= NF; i++) { split($i, kv, "="); vals[kv[1]] = vals[kv[1]] " " kv[2] } }
  END { printf "%-9s %8.2f %8.2f %12.0f %16.2f\n", enc, median("sync_s"), median("cpu_s"), median("peak_rss_mb"), median("apiserver_cpu_s") }
  ' "$WORK/rows"
done
