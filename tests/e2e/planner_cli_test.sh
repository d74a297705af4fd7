#!/usr/bin/env bash
# planner_cli_test.sh: tarema-planner plan as a user runs it, offline: WARP's turbine case as
# native YAML and as CWL (inline and packed) on 14 nodes, free and with ten nodes busy for 35
# minutes (LES must start at +20:00 so HPDA follows without a gap), every solver and objective,
# the JSON answer's fields, and bad input giving exit 1 and an error naming the step or field.
# Needs no cluster or database.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
PL="$BIN/tarema-planner"
FX="$REPO_ROOT/tests/fixtures/planner"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CL="$FX/cluster-14.yaml"
BUSY="$FX/busy-turbine.yaml"

check "turbine table, free nodes" bash -c "'$PL' plan '$FX/turbine.yaml' --cluster '$CL' > '$TMP/t.txt' &&
  grep -qx 'step LES starts at +0:00 on c-1,c-2, ends +15:00' '$TMP/t.txt' &&
  grep -q '^step HPDA starts at +15:00 on .*, ends +45:00$' '$TMP/t.txt' &&
  grep -q '^makespan 45:00 .*solver ilp, optimal' '$TMP/t.txt'"

# the JSON answer checked field by field; $1 solver flag, $2 objective, $3 expected solver
busy_json() {
  "$PL" plan "$FX/turbine.yaml" --cluster "$CL" --busy "$BUSY" --solver "$1" --objective "$2" --json > "$TMP/b.json" &&
  python3 - "$TMP/b.json" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("solver", "optimal", "bound_s", "makespan_s", "end_s", "steps"):
    assert k in d, k
assert d["solver"] == sys.argv[2], d["solver"]
assert d["optimal"] is True, d
steps = {s["name"]: s for s in d["steps"]}
assert steps["LES"]["start_s"] == 1200 and steps["LES"]["end_s"] == 2100, steps["LES"]
assert steps["HPDA"]["start_s"] == 2100 and steps["HPDA"]["end_s"] == 3900, steps["HPDA"]
assert d["makespan_s"] == 2700 and d["end_s"] == 3900, d
# LES only fits on the four free nodes; HPDA's five pods each need a whole node
assert set(steps["LES"]["nodes"]) <= {"c-11", "c-12", "c-13", "c-14"}, steps["LES"]
assert len(steps["LES"]["nodes"]) == 2 and len(set(steps["LES"]["nodes"])) == 2
assert len(set(steps["HPDA"]["nodes"])) == 5, steps["HPDA"]
PY
}
check "busy: no gap, ILP (auto)" busy_json auto makespan ilp
check "busy: no gap, ILP (forced)" busy_json ilp makespan ilp
check "busy: no gap, heuristic" busy_json heuristic makespan heuristic
check "busy: objective end" busy_json auto end ilp

check "busy table shows +20:00" bash -c "'$PL' plan '$FX/turbine.yaml' --cluster '$CL' --busy '$BUSY' |
  grep -q '^step LES starts at +20:00 on c-1[1-4],c-1[1-4], ends +35:00$'"

check "30 s slots give the same plan" bash -c "'$PL' plan '$FX/turbine.yaml' --cluster '$CL' --busy '$BUSY' --slot 30s --json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); s={x[\"name\"]: x for x in d[\"steps\"]}; assert d[\"slot_s\"]==30 and s[\"LES\"][\"start_s\"]==1200 and d[\"makespan_s\"]==2700, d'"

# CWL, inline and packed, plan exactly as the native form does
"$PL" plan "$FX/turbine.yaml" --cluster "$CL" --busy "$BUSY" --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["steps"], sort_keys=True))' > "$TMP/native.steps"
for f in turbine.cwl turbine-graph.cwl; do
  check "CWL $f plans like the native form" bash -c "'$PL' plan '$FX/$f' --deployment '$FX/turbine-deploy.yaml' --cluster '$CL' --busy '$BUSY' --json |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[\"steps\"], sort_keys=True))' | diff - '$TMP/native.steps'"
done

# bad input: exit status 1 and a message naming what is wrong
bad() { # NAME EXPECTED-TEXT ARGS...
  local name=$1; shift
  check "$name" bash -c 'want=$1; shift; out=$("$PL" "$@" 2>&1); rc=$?
    [ $rc = 1 ] || [ $rc = 2 ] || { echo "exit status $rc: $out"; exit 1; }
    grep -qF -- "$want" <<<"$out" || { echo "$out"; exit 1; }' _ "$@"
}
export PL
cat > "$TMP/cycle.yaml" <<'Y'
name: c
steps:
  - {name: A, after: [B], requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}
  - {name: B, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}
Y
bad "cycle" "form a cycle" plan "$TMP/cycle.yaml" --cluster "$CL"
sed 's/after: \[LES\]/after: [LESS]/' "$FX/turbine.yaml" > "$TMP/unknown.yaml"
bad "unknown dependency" "step 'HPDA': after: unknown step 'LESS'" plan "$TMP/unknown.yaml" --cluster "$CL"
sed 's/pods: 5/pods: 15/' "$FX/turbine.yaml" > "$TMP/big.yaml"
bad "step larger than the cluster" "step 'HPDA' is larger than the cluster" plan "$TMP/big.yaml" --cluster "$CL"
sed 's/duration: 15m/task: chipseq\/BWA_MEM/' "$FX/turbine.yaml" > "$TMP/task.yaml"
bad "task: needs history" "step 'LES': task: a runtime predicted from history" plan "$TMP/task.yaml" --cluster "$CL"
cat > "$TMP/profiles.yaml" <<'Y'
items:
  - {spec: {workflow: chipseq, process: BWA_MEM}, status: {mean: {realtimeMs: 839500}}}
Y
check "task: predicted from --profiles (839.5 s -> 840 s, 14 slots)" bash -c "'$PL' plan '$TMP/task.yaml' --cluster '$CL' --profiles '$TMP/profiles.yaml' --json |
  python3 -c 'import json,sys; s={x[\"name\"]: x for x in json.load(sys.stdin)[\"steps\"]}; assert s[\"LES\"][\"end_s\"]-s[\"LES\"][\"start_s\"]==840 and s[\"HPDA\"][\"start_s\"]==s[\"LES\"][\"end_s\"], s'"
bad "CWL without deployment" "--deployment FILE" plan "$FX/turbine.cwl" --cluster "$CL"
echo 'tools: {les: {image: les:1.0}}' > "$TMP/deploy.yaml"
bad "deployment missing a tool" "no entry for tool 'hpda' (step HPDA)" plan "$FX/turbine.cwl" --deployment "$TMP/deploy.yaml" --cluster "$CL"
sed 's/^    out: \[fields\]$/    out: [fields]\n    scatter: mesh/' "$FX/turbine.cwl" > "$TMP/scatter.cwl"
bad "unsupported CWL feature" "unsupported CWL feature 'scatter'" plan "$TMP/scatter.cwl" --deployment "$FX/turbine-deploy.yaml" --cluster "$CL"
echo '- {node: c-15, cores: 1, until: 5m}' > "$TMP/busy.yaml"
bad "busy on an unknown node" "node 'c-15' is not in the cluster" plan "$FX/turbine.yaml" --cluster "$CL" --busy "$TMP/busy.yaml"
bad "no cluster" "--cluster CLUSTER.yaml is required" plan "$FX/turbine.yaml"
bad "bad objective" "--objective must be makespan or end" plan "$FX/turbine.yaml" --cluster "$CL" --objective fast
bad "bad solver" "--solver must be auto, ilp or heuristic" plan "$FX/turbine.yaml" --cluster "$CL" --solver cplex
bad "bad slot" "duration '0x'" plan "$FX/turbine.yaml" --cluster "$CL" --slot 0x
bad "missing file" "nope.yaml" plan "$TMP/nope.yaml" --cluster "$CL"
# 300 independent steps on 14 nodes: auto falls back to the heuristic (model over the cut-off);
# a forced ILP refuses to build a model over its hard limit instead of running out of memory
python3 -c '
print("name: wide\nsteps:")
for i in range(300):
    print("  - {name: s%d, requests: {cpu: 4, memory: 4Gi}, duration: %dm, image: x}" % (i, 5 + i % 50))
' > "$TMP/wide.yaml"
check "wide: auto uses the heuristic" bash -c "'$PL' plan '$TMP/wide.yaml' --cluster '$CL' --json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"solver\"]==\"heuristic\" and d[\"ilp\"][\"status\"]==\"too-large\" and len(d[\"steps\"])==300, d[\"ilp\"]'"
bad "wide: forced ILP too large" "more than the 200000 the planner builds" plan "$TMP/wide.yaml" --cluster "$CL" --solver ilp
# durations: per node group: the step runs 10 min on c2, 30 min elsewhere; free nodes of both
# groups: planned on c2 for 10 min; a group the cluster lacks is refused
cat > "$TMP/groups-cluster.yaml" <<'Y'
node_types:
  - {name: n1, count: 2, cores: 8, memory: 32Gi}
  - {name: c2, count: 2, cores: 8, memory: 32Gi}
Y
cat > "$TMP/groups.yaml" <<'Y'
name: g
steps:
  - {name: a, pods: 2, requests: {cpu: 8, memory: 1Gi}, duration: 30m, durations: {c2: 10m}, image: x}
Y
check "durations: the faster group's walltime (10 min on c2)" bash -c "'$PL' plan '$TMP/groups.yaml' --cluster '$TMP/groups-cluster.yaml' --json |
  python3 -c 'import json,sys; s=json.load(sys.stdin)[\"steps\"][0]; assert s[\"end_s\"]-s[\"start_s\"]==600 and s[\"nodes\"]==[\"c2-1\",\"c2-2\"], s'"
sed 's/c2: 10m/c3: 10m/' "$TMP/groups.yaml" > "$TMP/groups-bad.yaml"
bad "durations: unknown group" "step 'a': durations: node group 'c3' is not one of the cluster's (n1, c2)" plan "$TMP/groups-bad.yaml" --cluster "$TMP/groups-cluster.yaml"
sed 's/c2: 10m/c2: soon/' "$TMP/groups.yaml" > "$TMP/groups-bad.yaml"
bad "durations: bad value" "step 'a': durations.c2" plan "$TMP/groups-bad.yaml" --cluster "$TMP/groups-cluster.yaml"
bad "unknown command" "unknown command 'launch'" launch "$FX/turbine.yaml"
bad "run --retries abc (atoi read 0)" "--retries: 'abc' is not an integer from 0 to 100" run --retries abc
bad "run --load-threshold 0.5x (atof read 0.5)" "--load-threshold: '0.5x' is not a number from 0 to 1" run --load-threshold 0.5x
bad "run --reservation-retries -1" "--reservation-retries: '-1' is not an integer from 0 to 100" run --reservation-retries -1
bad "submit --retries 3x (atoi read 3)" "--retries: '3x' is not an integer from 0 to 100" submit "$FX/turbine.yaml" --retries 3x

summary
