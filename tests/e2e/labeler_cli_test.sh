#!/usr/bin/env bash
# labeler_cli_test.sh: `tarema-labeler ingest` and `label` as an operator runs them, against a
# real PostgreSQL (DATABASE_URL): summaries, bad-row reports with line numbers, idempotent
# re-ingest, and labels with the numbers behind them (hand-computed below) as text and JSON.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

work=$(mktemp -d)
wf=e2e-cli-$$
L="$BIN/tarema-labeler"
cleanup() {
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow LIKE '$wf%'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
export TZ=UTC

check "migrate" "$L" migrate
# The standard PG* variables alone are enough (hack/postgres.sh env sets both forms).
if [ -n "${PGHOST:-}" ]; then check "connects with PG* variables only" env -u DATABASE_URL "$L" migrate; fi
"$L" ingest --workflow "$wf" tests/fixtures/labeler/chipseq_trace_human.txt >"$work/out" 2>"$work/err"
rc=$?
grep -q 'stored 40 task runs (40 new, 0 updated), skipped 2 bad rows' "$work/out" && [ $rc = 0 ] &&
  pass "ingest prints a summary" || fail "ingest summary" "rc=$rc $(cat "$work/out" "$work/err")"
grep -q 'chipseq_trace_human.txt:22: 5 fields, the header has 36' "$work/err" &&
  grep -q "chipseq_trace_human.txt:33: column 'peak_rss': size '12 XB'" "$work/err" &&
  pass "bad rows are reported with their line numbers" || fail "bad rows reported" "$(cat "$work/err")"
"$L" ingest --workflow "$wf" tests/fixtures/labeler/chipseq_trace_human.txt >"$work/out" 2>/dev/null
grep -q '(0 new, 40 updated)' "$work/out" && pass "re-ingest updates, never duplicates" || fail "re-ingest" "$(cat "$work/out")"
n=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM task_runs WHERE workflow = '$wf'")
[ "$n" = 40 ] && pass "40 rows stored" || fail "40 rows stored" "got $n"

"$L" ingest --workflow "$wf" /nonexistent/trace.txt >/dev/null 2>"$work/err"
[ $? != 0 ] && grep -q '/nonexistent/trace.txt' "$work/err" && pass "missing file is an error naming it" || fail "missing file" "$(cat "$work/err")"
printf 'a,b\n1,2\n' >"$work/notrace.csv"
"$L" ingest --workflow "$wf" "$work/notrace.csv" >/dev/null 2>"$work/err"
[ $? != 0 ] && grep -q "is this a Nextflow trace file" "$work/err" && pass "non-trace file is refused" || fail "non-trace file" "$(cat "$work/err")"
"$L" ingest "$work/notrace.csv" >/dev/null 2>"$work/err"
[ $? = 2 ] && grep -q -- "--workflow" "$work/err" && pass "ingest without --workflow is a usage error" || fail "usage error" "$(cat "$work/err")"

# Regression: a row with a non-UTF-8 byte made PostgreSQL refuse its whole batch, so nothing
# of the file was stored. Now that row alone is skipped with its line number.
printf 'hash\tprocess\tstatus\n01/a\tGOOD\tCOMPLETED\n02/b\tBAD\xff\tCOMPLETED\n03/c\tALSO_GOOD\tCOMPLETED\n' >"$work/latin1.txt"
"$L" ingest --workflow "$wf-latin1" "$work/latin1.txt" >"$work/out" 2>"$work/err"
grep -q 'stored 2 task runs (2 new, 0 updated), skipped 1 bad rows' "$work/out" &&
  grep -q "latin1.txt:3: column 'process'.*not valid UTF-8" "$work/err" &&
  pass "a non-UTF-8 row is skipped, the rest stored" || fail "non-UTF-8 row" "$(cat "$work/out" "$work/err")"
"$L" ingest --workflow "$(printf 'x%.0s' $(seq 1 200))" "$work/latin1.txt" >/dev/null 2>"$work/err"
[ $? = 2 ] && grep -q -- "--workflow: 200 bytes long, at most 127" "$work/err" &&
  pass "an over-long --workflow is refused" || fail "over-long --workflow" "$(cat "$work/err")"

# Hand-computed (groups_3.json: cpu classes 20, 20, 40 cores -> p = 0.25, 0.5; mem classes
# likewise; io classes 40, 40 -> p = 0.5). cpu samples 100..700: h = 1.5 -> 250, h = 3 -> 400.
# A (100, 200) 150 -> 1; B (300, 400) 350 -> 2; C (500, 600, 700) 600 -> 3. D has no %cpu.
# mem 1,1,2,2,3,3,3 MB: bounds 1.5 MB, 2 MB; B's 2 MB is on the bound -> 3. io: every run 10
# bytes, so the bound is 10 and every process sits on it -> 2 (ties go up).
{
  printf 'task_id\tprocess\tstatus\t%%cpu\tpeak_rss\trchar\twchar\trealtime\n'
  printf '1\tA\tCOMPLETED\t100%%\t1 MB\t10\t0\t1s\n'
  printf '2\tA\tCOMPLETED\t200%%\t1 MB\t10\t0\t3s\n'
  printf '3\tB\tCOMPLETED\t300%%\t2 MB\t10\t0\t1s\n'
  printf '4\tB\tCOMPLETED\t400%%\t2 MB\t10\t0\t1s\n'
  printf '5\tC\tCOMPLETED\t500%%\t3 MB\t10\t0\t1s\n'
  printf '6\tC\tCOMPLETED\t600%%\t3 MB\t10\t0\t1s\n'
  printf '7\tC\tCOMPLETED\t700%%\t3 MB\t10\t0\t1s\n'
  printf '8\tD\tCOMPLETED\t-\t-\t-\t-\t1s\n'
  printf '9\tC\tFAILED\t9000%%\t9 GB\t10\t0\t1s\n'
} >"$work/hand.txt"
check "ingest hand-made trace" "$L" ingest --workflow "$wf-hand" "$work/hand.txt"
"$L" label --workflow "$wf-hand" --groups tests/fixtures/labeler/groups_3.json --json >"$work/label.json" 2>"$work/err"
got=$(python3 - "$work/label.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["process"]: x for x in d["processes"]}
print(d["features"]["cpu"]["bounds"], d["features"]["cpu"]["shares"],
      [p[k]["labels"]["cpu"] for k in "ABCD"], p["C"]["runs"], p["A"]["meanRealtimeMs"],
      p["D"]["estimates"]["cpu"])
PY
)
[ "$got" = "[250.0, 400.0] [0.25, 0.25, 0.5] [1, 2, 3, None] 3 2000.0 None" ] &&
  pass "label --json gives hand-computed bounds and labels" || fail "label --json" "got: $got $(cat "$work/err")"
"$L" label --workflow "$wf-hand" --process B --groups tests/fixtures/labeler/groups_3.json >"$work/out" 2>&1
grep -q 'bounds (%cpu): 250 400' "$work/out" && grep -Eq '^B +2 +2 +3 +2 ' "$work/out" &&
  pass "label text shows bounds and the process row" || fail "label text" "$(cat "$work/out")"
"$L" label --workflow "$wf-none" --groups tests/fixtures/labeler/groups_3.json >/dev/null 2>"$work/err"
[ $? = 1 ] && grep -q "no completed task runs" "$work/err" && pass "workflow without history: unlabeled, said so" || fail "no history" "$(cat "$work/err")"
echo '{"groups":[{"id":1,"nodes":["a"],"total_cores":0,"labels":{"tarema.io/group":"1"}}]}' >"$work/bad.json"
"$L" label --workflow "$wf-hand" --groups "$work/bad.json" >/dev/null 2>"$work/err"
[ $? = 1 ] && grep -q "group 1: \"total_cores\" must be an integer >= 1" "$work/err" && pass "bad groups file is reported" || fail "bad groups" "$(cat "$work/err")"
summary
