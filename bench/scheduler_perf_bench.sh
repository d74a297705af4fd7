#!/usr/bin/env bash
# bench/scheduler_perf_bench.sh: three of kube-scheduler's own scheduler_perf workloads
# (test/integration/scheduler_perf, v1.35.4) on a dedicated kwok cluster, tarema-scheduler
# against the real kube-scheduler of the cluster's version, same nodes, same pods, same client
# budget (run by `make bench`; issue 30, "Performance"):
#   SchedulingPodAntiAffinity       affinity/: pods of color=green with required anti-affinity
#                                   to color=green per hostname, in namespaces sched-0 and sched-1
#   TopologySpreading               topology_spreading/: nodes in zones moon-1..3, plain pods,
#                                   then pods of color=blue spread per zone (maxSkew 5, DoNotSchedule)
#   SchedulingPreferredPodAffinity  affinity/: pods of color=red with preferred affinity (weight 1)
#                                   to color=red per hostname
# The templates are scheduler_perf's (templates/*.yaml, written here as JSON); the nodes are its
# default node (4 cores, 32 GiB, 110 pods). As in scheduler_perf, the scheduler under test places
# the init pods first (not measured), then the measured pods are created while it runs; its
# parameters at 500 and 5,000 nodes are scheduler_perf's own (initPods / measurePods):
#   anti-affinity 100/400 and 1000/1000, spreading 1000/1000 and 5000/2000, preferred affinity
#   500/1000 and 5000/1000. Other node counts scale the 5,000-node figures.
# Every run gets a fresh cluster and a freshly started scheduler; the rounds alternate the order.
# Per run (bench/scheduler_live_bench.c measures the measured step): pods/s (bound / first
# create .. last bind), p50/p99 creation -> bind, the scheduler's CPU seconds during the measured
# step and its peak RSS (VmHWM, whole life), and what the placement shows:
#   anti-affinity  nodes holding two green pods (must be 0: the run fails otherwise)
#   spreading      the blue pods per zone and their skew (must be at most 5)
#   preferred      the measured red pods that share a node with another red pod
# Nothing is asserted about speed; exit status 1 when a run could not be made, not every pod was
# bound, or a required constraint was broken.
#
#   BENCH_PERF_NODES="5000"             node counts
#   BENCH_PERF_WORKLOADS="anti-affinity spreading preferred-affinity"
#   BENCH_PERF_ROUNDS=1                 runs of each scheduler per workload and node count
#   BENCH_PERF_TIMEOUT_S=900            bound on each step
#   BENCH_QPS=1000 BENCH_BURST=2000     client budget of both schedulers
#   BENCH_PERF_CLUSTER_NAME=bench-perf  cluster instance (torn down at the end)
#   BENCH=name, BENCH_LIVE=0            as in hack/bench.sh ("scheduler_perf"; skip live ones)
#   BENCH_PERF_WHO="tarema kube-scheduler"   the schedulers measured (either or both)
#   BENCH_TAREMA_ARGS="..."             more tarema-scheduler flags (e.g. --config FILE)
#   BENCH_PERF_KEEP=DIR                 keep the run's logs (schedulers, driver) in DIR
#   O=build BINDIR=bin                  where the binaries are
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../hack/lib.sh"
cd "$REPO_ROOT"
if [ -n "${BENCH:-}" ] && [[ scheduler_perf_bench != *"$BENCH"* ]]; then exit 0; fi
if [ "${BENCH_LIVE:-1}" = 0 ]; then
  step "benchmark scheduler_perf: skipped (BENCH_LIVE=0)"
  exit 0
fi
O=${O:-build}
BINDIR=${BINDIR:-bin}
NODE_COUNTS=${BENCH_PERF_NODES:-5000}
WORKLOADS=${BENCH_PERF_WORKLOADS:-anti-affinity spreading preferred-affinity}
ROUNDS=${BENCH_PERF_ROUNDS:-1}
TIMEOUT_S=${BENCH_PERF_TIMEOUT_S:-900}
QPS=${BENCH_QPS:-1000}
BURST=${BENCH_BURST:-2000}
export TAREMA_CLUSTER_NAME=${BENCH_PERF_CLUSTER_NAME:-bench-perf}
DRIVER=$O/bench/scheduler_live_bench
TAREMA=$BINDIR/tarema-scheduler
CLK=$(getconf CLK_TCK)
[ -x "$DRIVER" ] || die "$DRIVER not built: run make O=$O BINDIR=$BINDIR first"
[ -x "$TAREMA" ] || die "$TAREMA not built: run make O=$O BINDIR=$BINDIR first"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "BENCH_PERF_ROUNDS must be a positive integer, not '$ROUNDS'"
[[ $TIMEOUT_S =~ ^[1-9][0-9]*$ ]] || die "BENCH_PERF_TIMEOUT_S must be a positive integer, not '$TIMEOUT_S'"
WHO=${BENCH_PERF_WHO:-tarema kube-scheduler}
for w in $WHO; do
  [ "$w" = tarema ] || [ "$w" = kube-scheduler ] || die "BENCH_PERF_WHO: unknown scheduler '$w' (tarema, kube-scheduler)"
done
for n in $NODE_COUNTS; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "BENCH_PERF_NODES: '$n' is not a positive integer"
done
for w in $WORKLOADS; do
  case $w in anti-affinity | spreading | preferred-affinity) ;;
  *) die "BENCH_PERF_WORKLOADS: unknown workload '$w' (anti-affinity, spreading, preferred-affinity)" ;;
  esac
done

KEEP=${BENCH_PERF_KEEP:-}
. "$HERE/kwok_bench_lib.sh"

# templates: scheduler_perf's pod templates as JSON (the driver names each copy).
container='{name: "pause", image: "registry.k8s.io/pause:3.10.1", ports: [{containerPort: 80}],
  resources: {limits: {cpu: "100m", memory: "500Mi"}, requests: {cpu: "100m", memory: "500Mi"}}}'
jq -n "{apiVersion: \"v1\", kind: \"Pod\", metadata: {}, spec: {containers: [$container]}}" >"$WORK/pod-default.json"
jq -n "{apiVersion: \"v1\", kind: \"Pod\", metadata: {labels: {color: \"green\"}}, spec: {
  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{
    labelSelector: {matchLabels: {color: \"green\"}}, topologyKey: \"kubernetes.io/hostname\",
    namespaces: [\"sched-1\", \"sched-0\"]}]}},
  containers: [$container]}}" >"$WORK/anti-affinity.json"
jq -n "{apiVersion: \"v1\", kind: \"Pod\", metadata: {labels: {color: \"blue\"}}, spec: {
  topologySpreadConstraints: [{maxSkew: 5, topologyKey: \"topology.kubernetes.io/zone\",
    whenUnsatisfiable: \"DoNotSchedule\", labelSelector: {matchLabels: {color: \"blue\"}}}],
  containers: [$container]}}" >"$WORK/spreading.json"
jq -n "{apiVersion: \"v1\", kind: \"Pod\", metadata: {labels: {color: \"red\"}}, spec: {
  affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1,
    podAffinityTerm: {labelSelector: {matchLabels: {color: \"red\"}},
      topologyKey: \"kubernetes.io/hostname\", namespaces: [\"sched-1\", \"sched-0\"]}}]}},
  containers: [$container]}}" >"$WORK/preferred-affinity.json"

# params WORKLOAD NODES: "INIT_TEMPLATE INIT_PODS MEASURE_PODS", scheduler_perf's at 500 and
# 5,000 nodes, its 5,000-node ratios elsewhere.
params() {
  local w=$1 n=$2
  case "$w:$n" in
  anti-affinity:500) echo "anti-affinity 100 400" ;;
  anti-affinity:*) echo "anti-affinity $((n / 5)) $((n / 5))" ;;
  spreading:500) echo "pod-default 1000 1000" ;;
  spreading:*) echo "pod-default $n $((n * 2 / 5))" ;;
  preferred-affinity:500) echo "preferred-affinity 500 1000" ;;
  preferred-affinity:*) echo "preferred-affinity $n $((n / 5))" ;;
  esac
}

# placement WORKLOAD: the figures of what the scheduler placed ("key=value ..."), and status 1
# when a required constraint is broken.
placement() {
  local w=$1
  kubectl get pods -A -o json | jq -r --arg w "$w" '
    [.items[] | select(.metadata.namespace | startswith("sched-")) | select(.spec.nodeName)] as $p
    | if $w == "anti-affinity" then
        ([$p[] | select(.metadata.labels.color == "green") | .spec.nodeName] | group_by(.)
          | map(select(length > 1)) | length) as $shared
        | "shared_nodes=\($shared)", (if $shared > 0 then "BROKEN" else empty end)
      elif $w == "spreading" then
        ($p | map(select(.metadata.labels.color == "blue") | .spec.nodeName)) as $nodes
        | "spread_nodes=\($nodes | length)"
      else
        ([$p[] | select(.metadata.labels.color == "red") | .spec.nodeName] | group_by(.)) as $g
        | ([$p[] | select(.metadata.namespace == "sched-1" and .metadata.labels.color == "red")
            | .spec.nodeName] ) as $m
        | ($g | map({key: .[0], value: length}) | from_entries) as $count
        | "colocated=\([$m[] | select($count[.] > 1)] | length)/\($m | length)"
      end' >"$WORK/placement" || return 1
  if [ "$w" = spreading ]; then
    # blue pods per zone: the zone is the node's label
    local zones
    zones=$(kubectl get pods -n sched-1 -o json | jq -r '.items[] | select(.spec.nodeName) | .spec.nodeName' |
      sort | uniq -c | awk '{print $2, $1}' >"$WORK/blue-per-node"
      kubectl get nodes -o json | jq -r '.items[] | "\(.metadata.name) \(.metadata.labels["topology.kubernetes.io/zone"] // "none")"' |
      sort >"$WORK/node-zone"
      # every zone counts, one without a blue pod as 0 (as kube's skew counts it)
      { awk '{print "zone", $2}' "$WORK/node-zone"; sort "$WORK/blue-per-node" | join - "$WORK/node-zone"; } |
        awk '$1 == "zone" {z[$2] += 0; next} {z[$3] += $2} END {for (k in z) if (k != "none") print k, z[k]}' | sort |
        awk '{s = s $1 ":" $2 ","; if ($2 > max) max = $2; if (NR == 1 || $2 < min) min = $2}
          END {printf "zones=%s skew=%d\n", substr(s, 1, length(s) - 1), max - min}')
    echo "$zones"
    [ "$(echo "$zones" | sed -n 's/.*skew=\([0-9]*\).*/\1/p')" -le 5 ] || return 1
    return 0
  fi
  grep -v BROKEN "$WORK/placement" | tr '\n' ' '
  ! grep -q BROKEN "$WORK/placement"
}

# run_one WORKLOAD NODES WHO ROUND: one fresh cluster, the init pods, the measured pods.
run_one() {
  local w=$1 nodes=$2 who=$3 round=$4 pid out rc c0 c1 hwm sched p tmpl init measure z1 z2 z3 fig
  p=$(params "$w" "$nodes")
  read -r tmpl init measure <<<"$p"
  if [ "$w" = spreading ]; then # scheduler_perf labels the nodes round robin over three zones
    z1=$(((nodes + 2) / 3)); z2=$(((nodes + 1) / 3)); z3=$((nodes / 3))
    cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: moon1, count: $z1, cpu: 4, memory: 32Gi, pods: 110, labels: {topology.kubernetes.io/zone: moon-1}}
  - {prefix: moon2, count: $z2, cpu: 4, memory: 32Gi, pods: 110, labels: {topology.kubernetes.io/zone: moon-2}}
  - {prefix: moon3, count: $z3, cpu: 4, memory: 32Gi, pods: 110, labels: {topology.kubernetes.io/zone: moon-3}}
EOF
  else
    cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: node, count: $nodes, cpu: 4, memory: 32Gi, pods: 110}
EOF
  fi
  TAREMA_START_TIMEOUT=${TAREMA_START_TIMEOUT:-900} bash hack/cluster.sh up --nodes "$WORK/nodes.yaml" \
    >>"$WORK/cluster.out" 2>&1 || die "cluster did not come up ($WORK/cluster.out)"
  eval "$(bash hack/cluster.sh env)"
  # as deployed: with the TaskProfile CRD (tarema waits a grace period for it otherwise)
  kubectl apply -f charts/tarema/crds/taskprofile.yaml >/dev/null || die "cannot install the TaskProfile CRD"
  cat >"$WORK/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: $QPS, burst: $BURST}
EOF
  if [ "$who" = tarema ]; then
    start_tarema
    pid=$TAREMA_PID
    sched=tarema
  else
    pid=$(start_kube)
    kube_ready || die "kube-scheduler did not place a probe pod"
    sched=default-scheduler
  fi
  step "$w, $nodes nodes, round $round, $who: $init init pods ($tmpl)"
  "$DRIVER" --namespace sched-0 --scheduler-name "$sched" --pods "$init" --template "$WORK/$tmpl.json" \
    --timeout-s "$TIMEOUT_S" >>"$WORK/init.out" 2>>"$WORK/driver.err" ||
    { step "$who: the init pods were not all placed ($(tail -n 1 "$WORK/init.out"))"; STATUS=1; }
  step "$w, $nodes nodes, round $round, $who: $measure measured pods ($w)"
  c0=$(cpu_s "$pid")
  out=$("$DRIVER" --namespace sched-1 --scheduler-name "$sched" --pods "$measure" \
    --template "$WORK/$w.json" --timeout-s "$TIMEOUT_S" 2>>"$WORK/driver.err")
  rc=$?
  c1=$(cpu_s "$pid")
  hwm=$(hwm_mb "$pid")
  if ! fig=$(placement "$w"); then
    step "$who: $w: a required constraint is broken: $fig $(cat "$WORK/placement")"
    STATUS=1
  fi
  out="$out cpu_s=$(echo "$c1 - $c0" | bc) peak_rss_mb=$hwm $fig"
  step "$w, $nodes nodes, round $round, $who: $out"
  [ "$who" = tarema ] && cp "$WORK/tarema.log" "$WORK/tarema-$w-${nodes}n-$round.log"
  echo "$w ${nodes}n $who $round $out" >>"$WORK/rows"
  [ $rc -eq 0 ] || { step "$who: not every measured pod was bound (see $WORK/driver.err)"; STATUS=1; }
  stop_schedulers
  bash hack/cluster.sh down >/dev/null 2>&1
}

STATUS=0
: >"$WORK/rows"
total=$(( $(echo "$WORKLOADS" | wc -w) * $(echo "$NODE_COUNTS" | wc -w) * ROUNDS * $(echo "$WHO" | wc -w) ))
i=0
for nodes in $NODE_COUNTS; do
  for w in $WORKLOADS; do
    for round in $(seq 1 "$ROUNDS"); do
      order=$WHO
      [ $((round % 2)) = 0 ] && order=$(echo "$WHO" | awk '{for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : "")}')
      for who in $order; do
        i=$((i + 1))
        step "run $i/$total: $w, $nodes nodes, round $round, $who"
        run_one "$w" "$nodes" "$who" "$round"
      done
    done
  done
done

echo
echo "scheduler_perf workloads: same kwok cluster shape, same pods, client qps=$QPS burst=$BURST; every run:"
cat "$WORK/rows"
echo
echo "medians over $ROUNDS round(s) per scheduler (the placement figures of the last round):"
printf '%-19s %-7s %-15s %9s %9s %9s %8s %12s  %s\n' workload scale scheduler pods/s p50_ms p99_ms cpu_s peak_rss_mb placement
awk '
function median(key,   n, i, j, t, a) {
  n = split(vals[key], a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
  id = $1 " " $2 " " $3
  if (!(id in seen)) { seen[id] = 1; order[++nid] = id }
  pl[id] = ""
  for (i = 5; i <= NF; i++) {
    split($i, kv, "=")
    if (kv[1] ~ /^(shared_nodes|spread_nodes|colocated|zones|skew)$/) { pl[id] = pl[id] " " $i; continue }
    vals[id SUBSEP kv[1]] = vals[id SUBSEP kv[1]] " " kv[2]
  }
}
END {
  for (k = 1; k <= nid; k++) {
    id = order[k]; split(id, p, " ")
    printf "%-19s %-7s %-15s %9.1f %9.0f %9.0f %8.2f %12.0f %s\n", p[1], p[2], p[3],
      median(id SUBSEP "pods_per_s"), median(id SUBSEP "p50_ms"), median(id SUBSEP "p99_ms"),
      median(id SUBSEP "cpu_s"), median(id SUBSEP "peak_rss_mb"), pl[id]
  }
}' "$WORK/rows"
exit $STATUS
