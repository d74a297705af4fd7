#!/usr/bin/env bash
# bench/gang_bench.sh: gang scheduling throughput on a dedicated kwok cluster (run by `make
# bench`): 5,000 nodes of the paper's four machine types, 1,000 gangs of 3 and 200 gangs of 20
# (the native gang API of the cluster's Kubernetes, found by discovery: on 1.35 one v1alpha1
# Workload per gang, policy.gang.minCount = its size, pods with spec.workloadRef; from 1.36 one
# PodGroup per gang, schedulingPolicy.gang.minCount, pods with spec.schedulingGroup; the version
# is TAREMA_K8S_VERSION's), scheduled by that version's kube-scheduler GangScheduling and, when
# it supports gangs, by tarema-scheduler, on the same cluster with the same client budget.
#
# Backlog mode, as kube-scheduler's scheduler_perf measures: every Workload and pod of a run
# is created first with no scheduler running, then the scheduler is started and the clock
# runs from its start to the moment the last gang is complete (all its members bound, as a
# watch of the namespace sees it). Per scheduler:
#   gangs/s          complete gangs / (scheduler start .. last gang complete)
#   ms/gang          the inverse: wall time per gang (start-up and informer sync included)
#   attempts/gang    the scheduler's own scheduling attempts (its metrics) per gang: kube-
#                    scheduler's per pod; tarema's per gang cycle (all members at once) plus
#                    any single-pod attempts
#   spread p50/p99/max_ms  first member bound .. last member bound of each gang: how long a
#                    gang is partly bound while its binds are in flight
#   partial          gangs left with 0 < bound < size at the end (all or nothing: must be 0)
#   cpu_s, peak_rss_mb  the scheduler process over its whole life (utime+stime, VmHWM)
# Nothing is asserted about speed: figures are for people. Exit status 1 when a run could not
# be made (cluster, objects, scheduler) or a gang was left partly bound.
#
#   BENCH_GANG_NODES=5000                 kwok nodes
#   BENCH_GANG_SPEC="1000x3 200x20"       gangs: COUNTxSIZE ...
#   TAREMA_GANG_BENCH_SCHEDULER=auto      schedulers: kube-scheduler, tarema, or "auto" (kube-
#                                         scheduler, and tarema-scheduler when its binary reads
#                                         spec.workloadRef, i.e. supports Workload gangs)
#   BENCH_GANG_TIMEOUT_S=900              bound on each run (scheduler start .. all complete)
#   BENCH_QPS=1000 BENCH_BURST=2000       client budget of both schedulers
#   BENCH_GANG_CLUSTER_NAME=bench-gang    cluster instance (torn down at the end)
#   BENCH=name, BENCH_LIVE=0              as in hack/bench.sh: run only benchmarks whose name
#                                         contains `name` (this one is "gang"); skip live ones
#   O=build BINDIR=bin                    where the binaries are
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../hack/lib.sh"
cd "$REPO_ROOT"
if [ -n "${BENCH:-}" ] && [[ gang != *"$BENCH"* ]] && [[ gang_bench != *"$BENCH"* ]]; then exit 0; fi
if [ "${BENCH_LIVE:-1}" = 0 ]; then
  step "benchmark gang: skipped (BENCH_LIVE=0)"
  exit 0
fi
BINDIR=${BINDIR:-bin}
NODES=${BENCH_GANG_NODES:-5000}
SPEC=${BENCH_GANG_SPEC:-1000x3 200x20}
WHO=${TAREMA_GANG_BENCH_SCHEDULER:-auto}
TIMEOUT_S=${BENCH_GANG_TIMEOUT_S:-900}
QPS=${BENCH_QPS:-1000}
BURST=${BENCH_BURST:-2000}
export TAREMA_CLUSTER_NAME=${BENCH_GANG_CLUSTER_NAME:-bench-gang}
TAREMA=$BINDIR/tarema-scheduler
CLK=$(getconf CLK_TCK)
POD_CPU=50m
POD_MEM=64Mi
[[ $NODES =~ ^[1-9][0-9]*$ ]] || die "BENCH_GANG_NODES must be a positive integer, not '$NODES'"
[[ $TIMEOUT_S =~ ^[1-9][0-9]*$ ]] || die "BENCH_GANG_TIMEOUT_S must be a positive integer, not '$TIMEOUT_S'"
GANGS=0
PODS=0
for s in $SPEC; do
  [[ $s =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || die "BENCH_GANG_SPEC: '$s' is not COUNTxSIZE (like 1000x3)"
  GANGS=$((GANGS + BASH_REMATCH[1]))
  PODS=$((PODS + BASH_REMATCH[1] * BASH_REMATCH[2]))
done
[ "$GANGS" -gt 0 ] || die "BENCH_GANG_SPEC is empty"

# Which schedulers run.
tarema_has_gangs() { [ -x "$TAREMA" ] && grep -qa workloadRef "$TAREMA" && grep -qa schedulingGroup "$TAREMA"; }
case $WHO in
  auto)
    RUNS=(kube-scheduler)
    if tarema_has_gangs; then
      RUNS+=(tarema)
    else
      step "tarema-scheduler: no Workload gang support in $TAREMA (it never reads spec.workloadRef): only kube-scheduler runs; TAREMA_GANG_BENCH_SCHEDULER=tarema forces it"
    fi
    ;;
  *)
    RUNS=()
    for w in ${WHO//,/ }; do
      case $w in
        kube-scheduler | kube) RUNS+=(kube-scheduler) ;;
        tarema) [ -x "$TAREMA" ] || die "$TAREMA not built: run make first"; RUNS+=(tarema) ;;
        *) die "TAREMA_GANG_BENCH_SCHEDULER: unknown scheduler '$w' (kube-scheduler, tarema, auto)" ;;
      esac
    done
    ;;
esac

WORK=$(mktemp -d)
SCHED_PID=
stop_scheduler() {
  if [ -n "$SCHED_PID" ] && [ "$SCHED_WHO" = tarema ]; then
    kill "$SCHED_PID" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$SCHED_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  [ "${SCHED_WHO:-}" = kube-scheduler ] && bash hack/cluster.sh scheduler stop >/dev/null 2>&1
  SCHED_PID=
}
cleanup() {
  [ -n "${WATCH_PID:-}" ] && kill "$WATCH_PID" 2>/dev/null
  stop_scheduler
  bash hack/cluster.sh down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cpu_s() { awk -v clk="$CLK" '{printf "%.2f", ($14 + $15) / clk}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm_mb() { awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

# nodes_file N: N nodes of the paper's machine types (5:4:4:2), as hack/bench-scheduler.sh.
nodes_file() {
  local n=$1 e2 n1 n2 c2
  e2=$((n * 5 / 15)); n1=$((n * 4 / 15)); n2=$((n * 4 / 15)); c2=$((n - e2 - n1 - n2))
  echo "nodes:"
  [ $e2 -gt 0 ] && echo "  - {prefix: e2, count: $e2, cpu: 6, memory: 16Gi, pods: 110, labels: {tarema.io/cpu: \"1\", tarema.io/mem: \"1\", tarema.io/io: \"1\", tarema.io/group: e2}}"
  [ $n1 -gt 0 ] && echo "  - {prefix: n1, count: $n1, cpu: 6, memory: 16Gi, pods: 110, labels: {tarema.io/cpu: \"2\", tarema.io/mem: \"1\", tarema.io/io: \"2\", tarema.io/group: n1}}"
  [ $n2 -gt 0 ] && echo "  - {prefix: n2, count: $n2, cpu: 8, memory: 32Gi, pods: 110, labels: {tarema.io/cpu: \"2\", tarema.io/mem: \"2\", tarema.io/io: \"2\", tarema.io/group: n2}}"
  echo "  - {prefix: c2, count: $c2, cpu: 16, memory: 64Gi, pods: 110, labels: {tarema.io/cpu: \"3\", tarema.io/mem: \"3\", tarema.io/io: \"3\", tarema.io/group: c2}}"
}

# node_objects N: the Nodes of nodes_file N as JSON lines, as hack/cluster.sh makes them (it
# creates nodes one request at a time, minutes for 5,000 on a busy machine; create_all posts
# them 16 at a time).
node_objects() {
  jq -cn --argjson n "$1" '
    ($n * 5 / 15 | floor) as $e2 | ($n * 4 / 15 | floor) as $n1 | ($n * 4 / 15 | floor) as $n2 |
    [{p: "e2", c: $e2, cpu: "6", mem: "16Gi", l: ["1", "1", "1"]},
     {p: "n1", c: $n1, cpu: "6", mem: "16Gi", l: ["2", "1", "2"]},
     {p: "n2", c: $n2, cpu: "8", mem: "32Gi", l: ["2", "2", "2"]},
     {p: "c2", c: ($n - $e2 - $n1 - $n2), cpu: "16", mem: "64Gi", l: ["3", "3", "3"]}][] |
    . as $t | range(1; $t.c + 1) | "\($t.p)-\(.)" as $name |
    {cpu: $t.cpu, memory: $t.mem, pods: "110", "ephemeral-storage": "100Gi"} as $res |
    {apiVersion: "v1", kind: "Node",
     metadata: {name: $name,
                labels: {"tarema.io/cpu": $t.l[0], "tarema.io/mem": $t.l[1], "tarema.io/io": $t.l[2],
                         "tarema.io/group": $t.p, "kubernetes.io/hostname": $name,
                         "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", type: "kwok"},
                annotations: {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
     spec: {}, status: {capacity: $res, allocatable: $res}}'
}

# ready_nodes: Nodes kwok reports Ready whose not-ready taint the node lifecycle controller
# has lifted (usable by a scheduler), as hack/cluster.sh counts them.
ready_nodes() {
  kubectl get nodes -o json | jq '[.items[] | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))
    | select(all(.spec.taints[]?; .key != "node.kubernetes.io/not-ready"))] | length'
}

# objects NS SCHED: every gang object, then every pod, as JSON lines (one jq run: thousands of
# gangs). Gang g<SIZE>-<i>, pods g<SIZE>-<i>-<j>. On 1.35 (GANG_GV scheduling.k8s.io/v1alpha1)
# a Workload with pod group "gang" and pods with spec.workloadRef; from 1.36 a PodGroup (the
# native runtime object, GANG_GV v1alpha2 or v1beta1) and pods with spec.schedulingGroup (as
# tests/e2e/gang_lib.sh).
objects() {
  jq -cn --arg ns "$1" --arg s "$2" --arg spec "$SPEC" --arg cpu "$POD_CPU" --arg mem "$POD_MEM" --arg gv "$GANG_GV" '
    [$spec | splits(" +") | select(length > 0) | split("x") | {count: (.[0] | tonumber), size: (.[1] | tonumber)}] as $spec |
    ($gv | endswith("/v1alpha1")) as $wl |
    ($spec[] | .size as $z | range(1; .count + 1) |
      if $wl then
        {apiVersion: $gv, kind: "Workload", metadata: {namespace: $ns, name: "g\($z)-\(.)"},
         spec: {podGroups: [{name: "gang", policy: {gang: {minCount: $z}}}]}}
      else
        {apiVersion: $gv, kind: "PodGroup", metadata: {namespace: $ns, name: "g\($z)-\(.)"},
         spec: {schedulingPolicy: {gang: {minCount: $z}}}}
      end),
    ($spec[] | .size as $z | range(1; .count + 1) as $i | range(1; $z + 1) as $j |
      {apiVersion: "v1", kind: "Pod",
       metadata: {namespace: $ns, name: "g\($z)-\($i)-\($j)",
                  annotations: {"tarema.io/cpu": "\(1 + $i % 3)", "tarema.io/mem": "2", "tarema.io/io": "\(1 + $i % 3)"}},
       spec: {schedulerName: $s, terminationGracePeriodSeconds: 0,
              containers: [{name: "c", image: "busybox", resources: {requests: {cpu: $cpu, memory: $mem}}}]}}
      | if $wl then .spec.workloadRef = {name: "g\($z)-\($i)", podGroup: "gang"}
        else .spec.schedulingGroup = {podGroupName: "g\($z)-\($i)"} end)'
}

# create_all FILE: POSTs every object of FILE (JSON lines) with the admin certificate, 16
# requests in flight (kubectl creates a few dozen objects a second here; thousands of gangs
# need more): Nodes, then Workloads, then pods. Fails unless every object was created (or, for
# a Node, exists).
create_all() {
  local f=$1 dir=$WORK/objs kind bad
  rm -rf "$dir"
  mkdir -p "$dir"
  jq -r '"\(.kind) " + (if .kind == "Pod" then "/api/v1/namespaces/\(.metadata.namespace)/pods"
    elif .kind == "Node" then "/api/v1/nodes"
    elif .kind == "PodGroup" then "/apis/\(.apiVersion)/namespaces/\(.metadata.namespace)/podgroups"
    else "/apis/\(.apiVersion)/namespaces/\(.metadata.namespace)/workloads" end)' "$f" |
    paste -d ' ' - "$f" |
    awk -v d="$dir" -v api="$TAREMA_APISERVER_URL" -v pki="$TAREMA_CLUSTER_DIR/pki" '{
      kind = $1; path = $2; json = $0; sub(/^[^ ]+ [^ ]+ /, "", json)
      o = sprintf("%s/%06d.json", d, NR); print json > o; close(o)
      cfg = d "/" kind ".curl"
      if (n[kind]++) print "next" > cfg
      printf "url = \"%s%s\"\nrequest = \"POST\"\nheader = \"Content-Type: application/json\"\ndata-binary = \"@%s\"\noutput = \"/dev/null\"\nwrite-out = \"%%{http_code} %s\\n\"\n", api, path, o, o > cfg
      # per transfer: `next` resets every option
      printf "cacert = \"%s/ca.crt\"\ncert = \"%s/admin.crt\"\nkey = \"%s/admin.key\"\n", pki, pki, pki > cfg
    }'
  for kind in Node Workload PodGroup Pod; do
    [ -s "$dir/$kind.curl" ] || continue
    curl -sS --parallel --parallel-max 16 -K "$dir/$kind.curl" >"$dir/$kind.codes" 2>"$dir/$kind.err" || true
    # a Node that exists already (409) is one of the cluster's first nodes
    bad=$(awk -v k="$kind" '$1 != "201" && !(k == "Node" && $1 == "409")' "$dir/$kind.codes" | head -n 3)
    [ -z "$bad" ] || { echo "creating ${kind}s failed: $bad $(head -c 300 "$dir/$kind.err")" >&2; return 1; }
    [ "$(wc -l <"$dir/$kind.codes")" = "$(grep -c '^url' "$dir/$kind.curl")" ] ||
      { echo "creating ${kind}s: $(wc -l <"$dir/$kind.codes") answers for $(grep -c '^url' "$dir/$kind.curl") requests: $(head -c 300 "$dir/$kind.err")" >&2; return 1; }
  done
}

# The watcher: a watch of the namespace's pods (kubectl get -w, restarted if it ends) timing
# when each pod is first seen bound and each gang complete. It writes "listed" to $2 once the
# initial list shows every pod (the scheduler is started after that), and at the end one line
# of key=value figures to stdout. Times are wall-clock seconds since the epoch.
watcher() {
  python3 - "$1" "$2" "$PODS" "$TIMEOUT_S" "$WORK/t0" <<'EOF'
import os, subprocess, sys, threading, time
ns, ready_file, want, timeout, t0_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
seen, bound_at, gang_bound, gang_first, gang_done = set(), {}, {}, {}, {}
def gang_of(pod):
    return pod.rsplit("-", 1)[0]
def size_of(gang):
    return int(gang[1:].split("-")[0])
begun = time.time()
def over():
    """All bound, or past the run's bound (or an hour without the scheduler starting)."""
    if len(bound_at) == want:
        return True
    if os.path.exists(t0_file):
        return time.time() > float(open(t0_file).read()) + timeout
    return time.time() > begun + 3600
proc = None
def watchdog():
    # kubectl blocks while nothing changes: end it once the run is over
    while not over():
        time.sleep(0.5)
    if proc:
        proc.kill()
threading.Thread(target=watchdog, daemon=True).start()
while not over():
    proc = subprocess.Popen(["kubectl", "get", "pods", "-n", ns, "-w", "--no-headers",
                             "-o", "custom-columns=N:.metadata.name,NODE:.spec.nodeName"],
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    for line in proc.stdout:
        now = time.time()
        f = line.split()
        if len(f) < 2:
            continue
        name, node = f[0], f[1]
        if name not in seen:
            seen.add(name)
            if len(seen) == want and not os.path.exists(ready_file):
                open(ready_file, "w").write("listed\n")
        if node != "<none>" and name not in bound_at:
            bound_at[name] = now
            g = gang_of(name)
            gang_bound[g] = gang_bound.get(g, 0) + 1
            gang_first.setdefault(g, now)
            if gang_bound[g] == size_of(g):
                gang_done[g] = now
        if len(bound_at) == want:
            break
    proc.kill()
    proc.wait()
    if not over():
        time.sleep(0.2)  # the watch ended early: list and watch again
t0 = float(open(t0_file).read()) if os.path.exists(t0_file) else float("nan")
last = max(gang_done.values()) if gang_done else float("nan")
spread = sorted(gang_done[g] - gang_first[g] for g in gang_done)
def pct(q):
    return 1000 * spread[min(len(spread) - 1, int(q * len(spread)))] if spread else float("nan")
partial = sum(1 for g, n in gang_bound.items() if n < size_of(g))
wall = last - t0
print("pods_bound=%d gangs_complete=%d partial=%d wall_s=%.2f gangs_per_s=%.1f ms_per_gang=%.2f "
      "spread_p50_ms=%.1f spread_p99_ms=%.1f spread_max_ms=%.1f" % (
      len(bound_at), len(gang_done), partial, wall, len(gang_done) / wall if wall > 0 else 0,
      1000 * wall / len(gang_done) if gang_done else float("nan"), pct(0.5), pct(0.99),
      1000 * spread[-1] if spread else float("nan")))
EOF
}

# attempts WHO PORT: the scheduler's pod scheduling attempts so far (its own metrics).
attempts() {
  if [ "$1" = kube-scheduler ]; then
    curl -sk --max-time 10 --cert "$TAREMA_CLUSTER_DIR/pki/admin.crt" --key "$TAREMA_CLUSTER_DIR/pki/admin.key" \
      "https://127.0.0.1:$2/metrics" | awk '/^scheduler_schedule_attempts_total/ {s += $2} END {print s + 0}'
  else
    # a gang's members are placed by one gang cycle (tarema_gang_attempts_total), not by pod
    # attempts: both count (the pod attempts alone read 0 for an all-gang backlog)
    curl -sf --max-time 10 "http://127.0.0.1:$2/metrics" |
      awk '/^tarema_(schedule|gang)_attempts_total/ {s += $2} END {print s + 0}'
  fi
}

# run_one WHO: one measured run; one line of figures in $WORK/rows.
run_one() {
  local who=$1 ns sched port out
  ns="bg-${who%%-*}"
  sched="gang-bench-${who%%-*}"
  SCHED_WHO=$who
  step "$who: creating $GANGS gangs (${GANG_GV##*/} $( [ "${GANG_GV##*/}" = v1alpha1 ] && echo Workloads || echo PodGroups)) and $PODS pods in namespace $ns (no scheduler running)"
  kubectl create namespace "$ns" >/dev/null || die "cannot create namespace $ns"
  for _ in $(seq 1 150); do kubectl get serviceaccount default -n "$ns" >/dev/null 2>&1 && break; sleep 0.2; done
  objects "$ns" "$sched" >"$WORK/objects.json"
  local tc=$SECONDS
  create_all "$WORK/objects.json" || die "$who: creating the gangs failed"
  step "$who: created in $((SECONDS - tc)) s"
  rm -f "$WORK/listed" "$WORK/t0"
  watcher "$ns" "$WORK/listed" >"$WORK/watch.out" 2>"$WORK/watch.err" &
  WATCH_PID=$!
  for _ in $(seq 1 600); do [ -e "$WORK/listed" ] && break; kill -0 "$WATCH_PID" 2>/dev/null || break; sleep 0.2; done
  [ -e "$WORK/listed" ] || die "$who: the watch did not list all $PODS pods ($(tail -n 3 "$WORK/watch.err"))"
  date +%s.%N >"$WORK/t0"
  if [ "$who" = kube-scheduler ]; then
    cat >"$WORK/ks.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: $QPS, burst: $BURST}
profiles:
  - schedulerName: $sched
EOF
    bash hack/cluster.sh scheduler start "$WORK/ks.yaml" >"$WORK/ks.out" 2>&1 || die "kube-scheduler did not start: $(tail -n 3 "$WORK/ks.out")"
    SCHED_PID=$(cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid")
    port=$SCHEDULER_PORT
  else
    "$TAREMA" --scheduler-name "$sched" --qps "$QPS" --burst "$BURST" --port 0 --log-level info >"$WORK/tarema.log" 2>&1 &
    SCHED_PID=$!
    port=
    for _ in $(seq 1 300); do
      port=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$WORK/tarema.log" | head -n 1)
      [ -n "$port" ] && break
      kill -0 "$SCHED_PID" 2>/dev/null || die "tarema-scheduler exited: $(tail -n 3 "$WORK/tarema.log")"
      sleep 0.1
    done
  fi
  wait "$WATCH_PID"
  WATCH_PID=
  out=$(cat "$WORK/watch.out")
  [ -n "$out" ] || die "$who: the watcher printed nothing ($(tail -n 3 "$WORK/watch.err"))"
  out="$out attempts_per_gang=$(echo "scale=2; $(attempts "$who" "$port") / $GANGS" | bc) cpu_s=$(cpu_s "$SCHED_PID") peak_rss_mb=$(hwm_mb "$SCHED_PID")"
  step "$who: $out"
  echo "$who $out" >>"$WORK/rows"
  stop_scheduler
}

step "benchmark gang: $NODES kwok nodes, gangs $SPEC ($GANGS gangs, $PODS pods), schedulers: ${RUNS[*]}"
# The instance comes up with the first 15 nodes (hack/cluster.sh), the rest are posted in
# parallel, then kwok readies them.
nodes_file $((NODES < 15 ? NODES : 15)) >"$WORK/nodes.yaml"
TAREMA_START_TIMEOUT=${TAREMA_START_TIMEOUT:-900} bash hack/cluster.sh up --workload-api --nodes "$WORK/nodes.yaml" ||
  die "cluster did not come up"
eval "$(bash hack/cluster.sh env)"
. "$TAREMA_CLUSTER_DIR/ports.env"
# The gang API this version serves (discovery, newest first): the native PodGroup of 1.36+, or
# 1.35's Workload.
GANG_GV=
for v in v1beta1 v1alpha2; do
  if kubectl get --raw "/apis/scheduling.k8s.io/$v" 2>/dev/null | jq -e '.resources[] | select(.name == "podgroups")' >/dev/null 2>&1; then
    GANG_GV=scheduling.k8s.io/$v
    break
  fi
done
if [ -z "$GANG_GV" ]; then
  kubectl get --raw /apis/scheduling.k8s.io/v1alpha1 2>/dev/null | jq -e '.resources[] | select(.name == "workloads")' >/dev/null 2>&1 ||
    die "the API server serves neither PodGroups (1.36+) nor v1alpha1 Workloads (1.35): no gang API"
  GANG_GV=scheduling.k8s.io/v1alpha1
fi
step "gang API: $GANG_GV ($( [ "${GANG_GV##*/}" = v1alpha1 ] && echo 'Workloads, spec.workloadRef' || echo 'PodGroups, spec.schedulingGroup'))"
node_objects "$NODES" >"$WORK/nodes.json"
tn=$SECONDS
create_all "$WORK/nodes.json" || die "creating $NODES nodes failed"
step "$NODES nodes created in $((SECONDS - tn)) s; waiting until kwok has readied them"
last=-1
peak=0
while r=$(ready_nodes) && [ "$r" -lt "$NODES" ]; do
  [ "$r" != "$last" ] && step "nodes Ready $r/$NODES"
  last=$r
  [ "$r" -gt "$peak" ] && peak=$r
  # kwok renews every node's lease; when the machine is too busy for that, nodes fall back to
  # NotReady faster than new ones become Ready (seen with 5,000 nodes at load 20 on 2 cores)
  [ "$peak" -lt 200 ] || [ $((r * 10)) -ge $((peak * 8)) ] ||
    die "kwok cannot keep $NODES nodes Ready on this machine: $peak were Ready, now $r (lease renewals fall behind): run with fewer BENCH_GANG_NODES"
  [ $((SECONDS - tn)) -lt 1800 ] || die "only $r of $NODES nodes Ready after 1800 s"
  sleep 3
done
step "$NODES nodes Ready $((SECONDS - tn)) s after their creation"
# As deployed: with the TaskProfile CRD (tarema waits a grace period for it otherwise).
kubectl apply -f charts/tarema/crds/taskprofile.yaml >/dev/null || die "cannot install the TaskProfile CRD"
: >"$WORK/rows"
for who in "${RUNS[@]}"; do run_one "$who"; done

echo
echo "gang-bench: $NODES kwok nodes, $GANGS gangs ($SPEC), $PODS pods of $POD_CPU, backlog (scheduler started after every object exists), client qps=$QPS burst=$BURST"
printf '%-15s %8s %8s %9s %9s %13s %11s %11s %7s %8s %12s\n' scheduler gangs/s ms/gang wall_s partial attempts/gang spread_p50 spread_max cpu_s rss_mb pods_bound
status=0
while read -r who rest; do
  declare -A f=()
  for kv in $rest; do f[${kv%%=*}]=${kv#*=}; done
  printf '%-15s %8s %8s %9s %9s %13s %11s %11s %7s %8s %12s\n' "$who" "${f[gangs_per_s]}" "${f[ms_per_gang]}" "${f[wall_s]}" \
    "${f[partial]}" "${f[attempts_per_gang]}" "${f[spread_p50_ms]}" "${f[spread_max_ms]}" "${f[cpu_s]}" "${f[peak_rss_mb]}" "${f[pods_bound]}/$PODS"
  [ "${f[partial]}" = 0 ] || { echo "$who left ${f[partial]} gang(s) partly bound" >&2; status=1; }
  [ "${f[gangs_complete]}" = "$GANGS" ] || { echo "$who completed ${f[gangs_complete]} of $GANGS gangs within ${TIMEOUT_S} s" >&2; status=1; }
  unset f
done <"$WORK/rows"
exit $status
