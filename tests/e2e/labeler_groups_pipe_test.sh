#!/usr/bin/env bash
# labeler_groups_pipe_test.sh: the profiler's real node-groups document feeds the labeler.
# `tarema-profiler bench` (real tool output replayed per node, tests/fixtures/profiler/replay)
# -> `tarema-profiler group -o` -> `tarema-labeler label --groups`, as a user pipes them; the
# committed tests/fixtures/labeler/groups_3.json is that output (regenerated and compared
# here), and both it and docs/node-groups.md's example satisfy the schema in that document.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"
work=$(mktemp -d)
wf=e2e-pipe-$$
L="$BIN/tarema-labeler"
cleanup() {
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow LIKE '$wf%'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

if ! out=$(bash tests/fixtures/labeler/make-groups-3.sh "$BIN" "$work/gen" 2>&1); then
  fail "bench (replayed tools) and group make a node-groups document" "$out"
  summary
  exit 1
fi
pass "bench (replayed tools) for 15 nodes and group -o make a node-groups document"
G=$work/gen/groups_3.json
# The figures carry this machine's memory size (bench reads /proc/meminfo): not compared.
norm() { jq -S 'del(.nodes[].figures.memory_bytes)' "$1"; }
if diff <(norm "$G") <(norm tests/fixtures/labeler/groups_3.json) >"$work/diff"; then
  pass "tests/fixtures/labeler/groups_3.json is the profiler's output (regenerated, equal)"
else
  fail "tests/fixtures/labeler/groups_3.json is the profiler's output" "$(head -n 20 "$work/diff")"
fi
shape=$(jq -c '[.groups[] | [.id, .total_cores, .labels["tarema.io/cpu"], .labels["tarema.io/mem"], .labels["tarema.io/io"]]]' "$G")
[ "$shape" = '[[1,20,"1","1","1"],[2,20,"2","2","1"],[3,40,"3","3","2"]]' ] &&
  pass "three groups of 20, 20, 40 cores; cpu, mem 1-2-3, io 1-1-2 (what the labeler tests compute with)" ||
  fail "group shape" "$shape"

# The schema in docs/node-groups.md, draft 2020-12, against the real output and the doc's example.
schema_check() {
  python3 - "$@" <<'PY'
import json, re, sys
import jsonschema
md = open("docs/node-groups.md").read()
blocks = re.findall(r"```json\n(.*?)```", md, re.S)
schema = json.loads(blocks[0])
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
docs = [("docs/node-groups.md example", json.loads(blocks[1]))]
docs += [(p, json.load(open(p))) for p in sys.argv[1:]]
bad = 0
for name, d in docs:
    for e in v.iter_errors(d):
        bad += 1
        print(f"{name}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
sys.exit(1 if bad else 0)
PY
}
check "the profiler's output and the documented example satisfy docs/node-groups.md's schema" \
  schema_check "$G" tests/fixtures/labeler/groups_3.json
# The schema is not vacuous: the labeler's old hand-written shape fails it.
echo '{"groups":[{"id":"0","nodes":["a"],"total_cores":4,"labels":{"cpu":1,"mem":1,"io":1}}]}' >"$work/old.json"
if schema_check "$work/old.json" >"$work/schema.out" 2>&1; then
  fail "the schema rejects the labeler's old hand-written shape" "accepted"
else
  pass "the schema rejects the labeler's old hand-written shape"
fi

check "ingest a Nextflow trace" "$L" ingest --workflow "$wf" tests/fixtures/labeler/chipseq_trace_human.txt
if "$L" label --workflow "$wf" --groups "$G" --json >"$work/label.json" 2>"$work/err"; then
  pass "label --groups reads the profiler's real output"
else
  fail "label --groups reads the profiler's real output" "$(cat "$work/err")"
fi
n=$(jq '[.processes[]? | select(.labels.cpu >= 1 and .labels.mem >= 1 and .labels.io >= 1)] | length' "$work/label.json" 2>/dev/null)
[ "${n:-0}" -ge 1 ] && pass "processes get cpu, mem and io labels from those groups ($n processes)" ||
  fail "processes get labels" "$(head -c 600 "$work/label.json")"
# A profile grouped on cpu only has no mem or io labels: the labeler takes the groups anyway.
"$BIN/tarema-profiler" group --features cpu_single -o "$work/cpu-only.json" "$work"/gen/profiles/*.json >/dev/null 2>&1
if "$L" label --workflow "$wf" --groups "$work/cpu-only.json" --json >"$work/label2.json" 2>"$work/err"; then
  pass "label --groups accepts a document grouped on --features cpu_single (no mem/io labels)"
else
  fail "label --groups accepts a cpu-only document" "$(cat "$work/err")"
fi
summary
