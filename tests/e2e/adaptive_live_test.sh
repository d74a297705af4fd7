#!/usr/bin/env bash
# adaptive_live_test.sh: the live half of the adaptive policy (issue 16) against the real API
# server and PostgreSQL, with real measurements (Lotaru chipseq on n1 and c2, ../shared/data).
# Own tainted kwok nodes in two groups, "slow-ID" (labels 1, standing in for n1) and "fast-ID"
# (labels 2, for c2). The n1 runs reach the labeler as a Nextflow trace (`ingest`, hostname =
# a slow node), the c2 runs as Nextflow weblog events (`serve`, hostname = a fast node); the
# labeler records each run's node group and publishes the runtime per group in TaskProfile
# status.runtimeByGroup, checked against the figures computed here from the CSV files. Then
# PHANTOMPEAKQUALTOOLS (about 60 % cpu: tarema's labels send it to the slow group, yet it runs
# faster on c2) goes to the fast group under `tarema-scheduler --policy adaptive`, and
# explain says why: each group's predicted runtime, measured, and the expected finish.
# Needs KUBECONFIG and DATABASE_URL.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

ID=$SCHED_E2E_ID
P=al$ID-
ns=adaptive-live-$ID
wf=e2e-adaptive-$ID
run_id=adaptive-run-$ID
DATA=$(lotaru_dir)
PROC=NFCORE_CHIPSEQ:CHIPSEQ:PHANTOMPEAKQUALTOOLS
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  stop_schedulers
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
  kubectl delete nodes -l "tarema.io/e2e-adaptive=$ID" --wait=false >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$wf'; DELETE FROM weblog_runs WHERE run_id = '$run_id'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
[ -f "$DATA/chipseq_n1.csv" ] && [ -f "$DATA/chipseq_c2.csv" ] ||
  { fail "real measurements at $DATA" "chipseq_n1.csv and chipseq_c2.csv are needed"; summary; exit 1; }

node_entry() { # PREFIX GROUP LABEL
  echo "  - {prefix: $P$1, count: 2, cpu: 8, memory: 32Gi, pods: 20,
     labels: {tarema.io/e2e-adaptive: \"$ID\", tarema.io/group: \"$2\", tarema.io/cpu: \"$3\", tarema.io/mem: \"$3\", tarema.io/io: \"$3\"},
     taints: [{key: tarema.io/e2e, value: \"$ID\", effect: NoSchedule}]}"
}
# Group ids unique to this run (other tests' nodes may still carry "slow" or "fast").
SLOW=slow-$ID FAST=fast-$ID
{ echo "nodes:"; node_entry n1 "$SLOW" 1; node_entry c2 "$FAST" 2; } >"$work/nodes.yaml"
check "test nodes created (slow: ${P}n1-1/2, fast: ${P}c2-1/2)" bash hack/cluster.sh nodes "$work/nodes.yaml"
check "CRD applies" apply_shared -f manifests/crds/taskprofile.yaml
check "CRD established" kubectl wait --for=condition=Established --timeout=30s crd/taskprofiles.tarema.io
kubectl create namespace "$ns" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$ns"

# The real runs in Nextflow's formats: the n1 file as a raw trace (the fields of
# tests/fixtures/nextflow/weblog.config), the c2 file as weblog process_completed events;
# rows alternate between the two nodes of their group. expected.json: per group, runs, mean
# and sample standard deviation of PHANTOMPEAKQUALTOOLS's realtime in seconds.
python3 - "$DATA" "$P" "$wf" "$run_id" "$PROC" "$work" "$SLOW" "$FAST" <<'PY'
import csv, json, statistics, sys
data, prefix, wf, run_id, proc, work, slow, fast = sys.argv[1:]
fields = ["task_id", "hash", "native_id", "process", "tag", "name", "status", "exit", "attempt",
          "cpus", "memory", "submit", "start", "complete", "realtime", "%cpu", "peak_rss", "rchar",
          "wchar", "read_bytes", "write_bytes", "hostname"]
expected = {}
def rows(machine):
    return list(csv.DictReader(open("%s/chipseq_%s.csv" % (data, machine))))
def record(i, r, node):
    p = "NFCORE_CHIPSEQ:CHIPSEQ:" + r["Task"]
    t0 = 1682942400000 + i * 1000
    rt = int(float(r["Realtime"]))
    return {"task_id": i, "hash": "%02x/%06x" % (i % 256, i), "native_id": "nf-%d" % i,
            "process": p, "tag": "s%d" % i, "name": "%s (s%d)" % (p, i), "status": "COMPLETED",
            "exit": 0, "attempt": 1, "cpus": int(r["cpus"]), "memory": int(float(r["memory"])),
            "submit": t0, "start": t0 + 100, "complete": t0 + 100 + rt, "realtime": rt,
            "%cpu": float(r["%cpu"]), "peak_rss": int(float(r["peak_rss"])),
            "rchar": int(float(r["rchar"])), "wchar": int(float(r["wchar"])),
            "read_bytes": int(float(r["read_bytes"])), "write_bytes": int(float(r["write_bytes"])),
            "hostname": node}
with open(work + "/n1_trace.txt", "w") as f:
    f.write("\t".join(fields) + "\n")
    for i, r in enumerate(rows("n1"), 1):
        rec = record(i, r, "%sn1-%d" % (prefix, i % 2 + 1))
        f.write("\t".join(str(rec[k]) for k in fields) + "\n")
with open(work + "/c2_events.jsonl", "w") as f:
    f.write(json.dumps({"runName": "adaptive_run", "runId": run_id, "event": "started",
                        "utcTime": "2023-05-01T12:00:00Z",
                        "metadata": {"workflow": {"projectName": wf, "manifest": {"name": wf}}}}) + "\n")
    for i, r in enumerate(rows("c2"), 1001):
        f.write(json.dumps({"runName": "adaptive_run", "runId": run_id, "event": "process_completed",
                            "utcTime": "2023-05-01T12:10:00Z",
                            "trace": record(i, r, "%sc2-%d" % (prefix, i % 2 + 1))}) + "\n")
for machine, group in (("n1", slow), ("c2", fast)):
    s = [float(r["Realtime"]) / 1000 for r in rows(machine) if r["Task"] == proc.split(":")[-1]]
    expected[group] = {"runs": len(s), "mean": statistics.mean(s), "sd": statistics.stdev(s)}
json.dump(expected, open(work + "/expected.json", "w"))
PY
check "real-format runs built from the measurements" test -s "$work/n1_trace.txt" -a -s "$work/c2_events.jsonl"
echo "    expected ($PROC): $(cat "$work/expected.json")"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$port" --spool "$work/spool" \
  --namespace "$ns" --node-selector "tarema.io/e2e-adaptive=$ID" --resync-seconds 3600 \
  >"$work/serve.log" 2>&1 &
pid=$!
if wait_for 20 curl -sf "$url/readyz"; then pass "serve becomes ready"; else fail "serve becomes ready" "$(tail -5 "$work/serve.log")"; fi
if wait_for 20 grep -q 'node groups known groups=2' "$work/serve.log"; then pass "serve sees the two node groups"; else
  fail "serve sees the two node groups" "$(tail -5 "$work/serve.log")"; fi

# n1: the trace, stored by `ingest`, which finds each hostname's group among the cluster's Nodes
out=$("$BIN/tarema-labeler" ingest --workflow "$wf" --run n1-run --node-selector "tarema.io/e2e-adaptive=$ID" "$work/n1_trace.txt" 2>&1)
[[ $out == *"stored 500 task runs (500 new, 0 updated)"* ]] && pass "ingest stores the 500 n1 runs" || fail "ingest n1 trace" "$out"
# c2: the weblog events, stored by `serve`, which finds the group through its Node informer
codes=$(python3 - "$url/weblog" "$work/c2_events.jsonl" <<'PY'
import collections, sys, urllib.request
c = collections.Counter()
for line in open(sys.argv[2]):
    req = urllib.request.Request(sys.argv[1], data=line.encode(), headers={"Content-Type": "application/json"})
    try:
        c[urllib.request.urlopen(req, timeout=10).status] += 1
    except urllib.error.HTTPError as e:
        c[e.code] += 1
print(" ".join("%s:%d" % kv for kv in sorted(c.items())))
PY
)
[ "$codes" = "202:501" ] && pass "501 weblog events (started + 500 c2 runs) acknowledged" || fail "weblog events acknowledged" "$codes"

stored() { psql "$DATABASE_URL" -qAtc "SELECT COALESCE(node_group, 'NULL') || ':' || source || ':' || count(*) FROM task_runs WHERE workflow = '$wf' GROUP BY node_group, source ORDER BY 1" | tr '\n' ' '; }
if wait_for 60 bash -c "[ \"\$(psql \"\$DATABASE_URL\" -qAtc \"SELECT count(*) FROM task_runs WHERE workflow = '$wf'\")\" = 1000 ]"; then
  pass "all 1000 runs stored"; else fail "all 1000 runs stored" "$(stored)"; fi
[ "$(stored)" = "$FAST:weblog:500 $SLOW:trace:500 " ] &&
  pass "each run carries its node's group: 500 slow (trace), 500 fast (weblog)" || fail "node group per run" "$(stored)"

tp() { kubectl -n "$ns" get taskprofiles -o json | jq -c --arg w "$wf" --arg p "$PROC" '.items[] | select(.spec.workflow == $w and .spec.process == $p) | .status'; }
ready() { [ "$(tp | jq '[.runtimeByGroup[]? | .runs] | add')" = 80 ]; }
if wait_for 60 ready; then pass "TaskProfile of PHANTOMPEAKQUALTOOLS has runtimeByGroup with all 80 runs"; else
  fail "runtimeByGroup published" "$(tp | head -c 600) $(tail -3 "$work/serve.log")"; fi
tp >"$work/status.json"
echo "    status.runtimeByGroup: $(jq -c .runtimeByGroup "$work/status.json")  labels: $(jq -c .labels "$work/status.json")"
if [ -s "$work/status.json" ] && jq -e --arg slow "$SLOW" --arg fast "$FAST" --slurpfile e "$work/expected.json" '
    def close(a; b): (a - b) | fabs < 0.002;
    [.runtimeByGroup[].group] == [$fast, $slow] and
    all(.runtimeByGroup[]; . as $g | $e[0][$g.group] as $x |
        $g.runs == $x.runs and close($g.meanSeconds; $x.mean) and close($g.stddevSeconds; $x.sd) and
        $g.p50Seconds > 0 and $g.p90Seconds >= $g.p50Seconds)' "$work/status.json" >/dev/null; then
  pass "per-group runs, mean and standard deviation equal those computed from the CSV files"
else
  fail "per-group figures" "$(jq -c .runtimeByGroup "$work/status.json") vs $(cat "$work/expected.json")"
fi
[ "$(jq '.labels.cpu' "$work/status.json")" = 1 ] && pass "its cpu label is 1 (tarema's labels point at the slow group)" ||
  fail "cpu label 1" "$(jq -c .labels "$work/status.json")"

# A new pod of the process. First with a scheduler name nobody serves, for explain.
pod() { # NAME SCHEDULER
  pod_json "$ns" "$1" "$2" 1 1Gi "{\"tarema.io/workflow\": \"$wf\"}" "$ID" |
    jq '.metadata.labels = {"nextflow.io/processName": "NFCORE_CHIPSEQ_CHIPSEQ_PHANTOMPEAKQUALTOOLS"}'
}
pod probe nobody-$ID | kubectl create -f - >/dev/null
json=$("$BIN/tarema-scheduler" explain "$ns/probe" -o json --policy adaptive 2>"$work/err")
ours() { jq -c --arg s "$SLOW" --arg f "$FAST" '[.groups[] | select(.id == $s or .id == $f) | {id, adaptive}]' 2>&1; }
echo "    explain adaptive: $(ours <<<"$json")"
fast_ms=$(jq --arg g "$FAST" '.[$g].mean * 1000 | round' "$work/expected.json")
slow_ms=$(jq --arg g "$SLOW" '.[$g].mean * 1000 | round' "$work/expected.json")
if [ -n "$json" ] && jq -e --arg p "$P" --arg fg "$FAST" --arg sg "$SLOW" --argjson f "$fast_ms" --argjson s "$slow_ms" '
    def grp(id): [.groups[] | select(.id == id) | .adaptive][0];
    (.selected | startswith($p + "c2-")) and
    (grp($fg) | .basis == "measured" and .runs == 40 and
       ((.predictedRuntimeMs - $f) | fabs) <= 1 and .expectedFinishMs == .predictedRuntimeMs) and
    (grp($sg) | .basis == "measured" and .runs == 40 and
       ((.predictedRuntimeMs - $s) | fabs) <= 1)' <<<"$json" >/dev/null; then
  pass "explain -o json: each group's measured prediction and expected finish; a fast node selected"
else
  fail "explain -o json (adaptive)" "$(cat "$work/err") $(jq -c '{selected, why}' <<<"$json" 2>&1 | head -c 600) $(ours <<<"$json")"
fi
text=$("$BIN/tarema-scheduler" explain "$ns/probe" --policy adaptive 2>"$work/err")
awk -v id="$ID" '/^  rank [0-9]+ +group (fast|slow)-/ && index($0, id) {print; getline; print} /^why/' <<<"$text" | sed 's/^/    | /'
grep -Eq "^why: group $FAST: earliest expected finish \(room now, predicted runtime [0-9.]+ s \(measured, 40 run\(s\)\)\) against .*group $SLOW [0-9.]+ s \(measured, 40 run\(s\)\)" <<<"$text" &&
  pass "explain (text) says why: the fast group's measured runtime is the earliest finish" ||
  fail "explain text why" "$(grep '^why' <<<"$text") $(cat "$work/err")"
grep -Eq "predicted runtime [0-9.]+ s \(measured, 40 run\(s\)\); expected finish in [0-9.]+ s" <<<"$text" &&
  pass "explain (text) shows each group's predicted runtime and expected finish" || fail "explain text per group" "$text"
# The node-level figures the policy scored with: every feasible node's slowdown and expected
# finish, the selected node's finish the earliest of them (the score compares whole seconds),
# each group's best node.
if [ -n "$json" ] && jq -e --arg p "$P" --arg fg "$FAST" --arg sg "$SLOW" '
    def grp(id): [.groups[] | select(.id == id) | .adaptive][0];
    . as $d | [.nodes[] | select(.feasible and (.name | startswith($p)))] as $ours |
    ($ours | length) > 0 and
    ($ours | all(.adaptive.slowdown >= 1 and (.adaptive.expectedFinishMs | type) == "number")) and
    ([.nodes[] | select(.name == $d.selected) | .adaptive.expectedFinishMs][0] <=
       ([$d.nodes[] | select(.feasible) | .adaptive.expectedFinishMs | numbers] | min) + 1000) and
    (grp($fg).bestNode.name | startswith($p + "c2-")) and
    (grp($sg).bestNode.name | startswith($p + "n1-"))' <<<"$json" >/dev/null; then
  pass "explain -o json: each node's slowdown and expected finish, the selected one the earliest; each group's best node"
else
  fail "explain node figures" "$(jq -c '[.nodes[] | {name, adaptive}], [.groups[] | .adaptive.bestNode]' <<<"$json" 2>&1 | head -c 800)"
fi
grep -Eq "best node ${P}c2-[^:]*: slowdown x[0-9.]+ \(uses [0-9.]+ \+ [0-9.]+ of [0-9]+ cores\), expected finish [0-9.]+ s" <<<"$text" &&
  grep -Eq "^why: .*; on ${P}c2-[^:]*: slowdown x" <<<"$text" &&
  pass "explain (text) shows the best node of each group and the chosen node's slowdown" ||
  fail "explain text node figures" "$(grep -E 'best node|^why' <<<"$text")"
tj=$("$BIN/tarema-scheduler" explain "$ns/probe" -o json --policy tarema 2>/dev/null)
[ -n "$tj" ] && jq -e --arg p "$P" '.selected | startswith($p + "n1-")' <<<"$tj" >/dev/null &&
  pass "tarema (the paper's labels) would send it to a slow node: the runtimes make the difference" ||
  fail "tarema picks slow" "$(jq -c '{selected, why}' <<<"$tj")"

# The live scheduler with --policy adaptive binds a new pod of the process to a fast node.
if start_scheduler "$work/sched.log" --policy adaptive --scheduler-name "adaptive-$ID" --namespaces "$ns"; then
  pass "tarema-scheduler --policy adaptive starts"
else
  fail "scheduler starts" "$(tail -5 "$work/sched.log")"
fi
pod task "adaptive-$ID" | kubectl create -f - >/dev/null
if wait_for 30 bash -c "[ -n \"\$(kubectl get pod -n $ns task -o jsonpath='{.spec.nodeName}')\" ]"; then
  node=$(pod_node "$ns" task)
  [[ $node == ${P}c2-* ]] && pass "the new PHANTOMPEAKQUALTOOLS pod is bound to $node (group fast, where it ran fastest)" ||
    fail "bound to the fast group" "$node"
else
  fail "pod bound" "$(tail -5 "$work/sched.log")"
fi
! grep -q "runtimeByGroup" "$work/sched.log" && pass "the scheduler read the TaskProfile without a warning" ||
  fail "no warning" "$(grep runtimeByGroup "$work/sched.log" | head -3)"
summary
