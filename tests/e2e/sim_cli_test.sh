#!/usr/bin/env bash
# sim_cli_test.sh: tarema-sim as a user runs it: the tiny hand-checked scenario through the CLI
# (table, --json, --policy all, --gantt), the paper scenarios with real lotaru data, and bad
# input (cycle, oversized process, unknown key, unknown policy) giving a clear error and exit 1.
# Needs no cluster or database.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
SIM="$BIN/tarema-sim"
FX="$REPO_ROOT/tests/fixtures/sim"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# tarema's two runs are 20 s (unlabeled, like fair) and 10 s (labeled): mean 15 (see
# tests/unit/sim_tiny_test.c for the hand computation)
check "tiny tarema table" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --no-shuffle --ideal | grep -E '^tiny +2 +15\.0s +20\.0s +10\.0s'"
check "tiny all policies json" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --no-shuffle --ideal --policy all --json > '$TMP/all.json' && python3 - '$TMP/all.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {p['policy']: p['workflows'][0]['makespan_mean_s'] for p in d['policies']}
want = {'tarema': 15, 'round-robin': 16, 'fair': 20, 'fill-nodes': 12, 'sjfn': 12, 'adaptive': 15}
assert got == want, got
assert abs(d['decrease_pct']['fair'] - 25.0) < 1e-9, d['decrease_pct']
PY"
# the lower bound (sim/bound.h): big's 10 s on the fast node is the longest path (the request
# area is 2 x 20 / 8 = 5 s), tarema's labeled run attains it, and the headroom against each
# policy is 1 - 10 / its mean makespan: fair 50 %, round robin 37.5 %, fill nodes 16.7 %
check "tiny: lower bound and headroom in the JSON" bash -c "python3 - '$TMP/all.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d['policies']:
    assert p['workflows'][0]['makespan_bound_s'] == 10, p['workflows'][0]
    assert all(r['bound_s'] == 10 and r['makespan_s'] >= 10 for r in p['runs']), p['runs']
assert min(r['makespan_s'] for p in d['policies'] for r in p['runs']) == 10
h = d['headroom_pct']
assert abs(h['fair'] - 50) < 1e-9 and abs(h['round-robin'] - 37.5) < 1e-9, h
assert abs(d['headroom_vs_standard_pct'] - 100 * (1 - (10**3 / (16 * 20 * 12)) ** (1 / 3))) < 1e-6, d['headroom_vs_standard_pct']
PY"
check "tiny: the headroom table names the bound" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --no-shuffle --ideal --policy all | sed -n '/^headroom:/,\$p' | grep -E '^tiny +10\.0 +.* 50\.0%'"
# --help names every policy --policy all runs (adaptive was missing from it)
for p in tarema round-robin fair fill-nodes sjfn adaptive; do
  check "--help names policy $p" bash -c "'$SIM' --help 2>&1 | sed -n '/--policy/,/--seed /p' | grep -qw -- '$p'"
done
check "gantt svg written" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --gantt '$TMP/g.svg' >/dev/null && grep -q '<svg' '$TMP/g.svg' && [ \$(grep -c '<title>' '$TMP/g.svg') = 6 ]"
check "same seed same output" bash -c "diff <('$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --policy all --seed 3 --json | grep -v wall_s) <('$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --policy all --seed 3 --json | grep -v wall_s)"
# The scenario names the measurements relative to a checkout next to ../shared; a copy pointing
# at lotaru_dir runs from a clone anywhere (as make demo does).
LOTARU=$(lotaru_dir)
NF5="$TMP/nfcore5.yaml"
lotaru_scenario nfcore5 "$NF5"
if need_lotaru; then # without the data: a failure naming it, never a skip
  for cl in 555 5442; do
    check "paper cluster $cl, five workflows, all policies" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-$cl.yaml' --workload '$NF5' --policy all --isolate | grep -q 'pooled'"
  done
  # nfcore-inputs.yaml: the lotaru input sets nfcore5 does not use, selected by label; the rows
  # per machine type are chipseq train-1 175 + test 75, eager train-1 130 + test 78, 7 runs each
  NFI="$TMP/nfcore-inputs.yaml"
  lotaru_scenario nfcore-inputs "$NFI"
  check "nfcore-inputs: four workflows from their own input sets" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$NFI' --policy adaptive --json | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r[\"tasks\"] == 7 * (175 + 75 + 130 + 78), r[\"tasks\"]; assert sorted(w[\"name\"] for w in r[\"workflows\"]) == [\"chipseq-test\", \"chipseq-train-1\", \"eager-test\", \"eager-train-1\"]'"
  # the calibrated model (default) and --ideal differ; --seeds reports mean and spread with
  # tarema next to adaptive
  # both runs must succeed: a failed run's empty output differs from the other's too
  check "calibrated differs from --ideal" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$NF5' --isolate --json >'$TMP/cal.json' && '$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$NF5' --isolate --ideal --json >'$TMP/ideal.json' && ! diff -q <(grep -v wall_s '$TMP/cal.json') <(grep -v wall_s '$TMP/ideal.json') >/dev/null"
  check "--seeds 3 shows adaptive with spread" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$NF5' --isolate --policy all --seeds 3 | grep -E '^adaptive vs round-robin, fair, fill-nodes pooled: -?[0-9.]+ \+- [0-9.]+ %'"
  check "--seeds json" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$NF5' --isolate --policy all --seeds 2 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"seeds\"]==2; assert \"sd\" in d[\"decrease\"][\"adaptive\"][\"sjfn\"][\"geomean\"]; h=d[\"headroom\"]; assert h[\"pooled_standard\"][\"mean\"] >= d[\"decrease\"][\"adaptive\"][\"pooled_standard\"][\"mean\"]; assert all(h[p][\"geomean\"][\"mean\"] >= d[\"decrease\"][\"adaptive\"][p][\"geomean\"][\"mean\"] for p in (\"sjfn\", \"fair\", \"tarema\")); assert sorted(h[\"bound_s\"]) == sorted(d[\"decrease\"][\"adaptive\"][\"sjfn\"][\"workflows\"])'"
  # a measurement file that copies another machine's rows is warned about, naming both files
  sed 's/,n1,chipseq,/,n2,chipseq,/' "$LOTARU/chipseq_n1.csv" > "$TMP/chipseq_fake_n2.csv"
  cat > "$TMP/dup.yaml" <<EOF2
workflows:
  - name: chipseq
    runs: 1
    requests: {cpu: 2, memory: 5Gi}
    label: train-2
    measurements:
      - {file: $(cd "$LOTARU" && pwd)/chipseq_n1.csv}
      - {file: $TMP/chipseq_fake_n2.csv}
      - {file: $(cd "$LOTARU" && pwd)/chipseq_c2.csv}
    processes:
      - {name: FASTQC}
EOF2
  check "duplicate machine rows are warned" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$TMP/dup.yaml' 2>&1 >/dev/null | grep -E 'warning: .*[0-9]+ of [0-9]+ rows of .*chipseq_fake_n2.csv \(machine n2\) duplicate rows of .*chipseq_n1.csv \(machine n1\)'"
  # the run must succeed and its stderr hold no warning (a failing run is not "no warning")
  check "real files are not warned" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$NF5' 2>'$TMP/nf5.err' >/dev/null || { echo \"tarema-sim exited \$?: \$(cat '$TMP/nf5.err')\"; exit 1; }; ! grep warning '$TMP/nf5.err'"
fi
check "--noise out of range is refused" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --noise -1 2>&1 | grep -q 'noise'; [ \${PIPESTATUS[0]} = 2 ]"

# the paper's protocol: a run that only builds history goes first. tarema's unlabeled 20 s run
# becomes the history run; both measured runs are labeled (10 s), and the table says so
check "--history-runs 1: measured runs only" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --no-shuffle --ideal --history-runs 1 > '$TMP/h1.txt' && grep -q '^measured runs only: each workflow ran 1 time before them' '$TMP/h1.txt' && grep -qE '^tiny +2 +10\.0s +10\.0s +10\.0s' '$TMP/h1.txt'"
check "--history-runs 1 json: the history run's makespan apart" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --no-shuffle --ideal --history-runs 1 --json | python3 -c 'import json,sys; r=json.load(sys.stdin); w=r[\"workflows\"][0]; assert r[\"history_runs\"] == 1 and w[\"makespan_history_s\"] == 20.0 and w[\"makespan_mean_s\"] == 10.0 and len(r[\"runs\"]) == 2, r'"
check "the calibrated model has one history run by default" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --json | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"history_runs\"] == 1'"
for v in -1 x 101; do
  check "--history-runs $v is refused" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --history-runs $v 2>&1 | grep -q \"history-runs '$v' is not a count\"; [ \${PIPESTATUS[0]} = 2 ]"
done

# with several policies, one Gantt chart per policy
check "gantt per policy" bash -c "'$SIM' --cluster '$FX/tiny-cluster.yaml' --workload '$FX/tiny-workload.yaml' --policy all --gantt '$TMP/p.svg' >/dev/null && for p in tarema round-robin fair fill-nodes sjfn; do [ \$(grep -c '<title>' \"$TMP/p-\$p.svg\") = 6 ] || exit 1; done"

# scenario files name their data relative to themselves: any current directory, a symlink to
# the scenario, and a clone with shared/ beside it (the CI layout) all find it
SHARED="$REPO_ROOT/../shared"
mkdir -p "$TMP/clone/repo/sim" "$TMP/bare/repo/sim"
cp -r "$REPO_ROOT/sim/scenarios" "$TMP/clone/repo/sim/"
cp -r "$REPO_ROOT/sim/scenarios" "$TMP/bare/repo/sim/"
# (this layout needs shared/ beside the checkout itself, not TAREMA_DATA: a failure naming it)
if [ -f "$SHARED/data/lotaru/chipseq_n1.csv" ] ||
  { fail "shared/ beside the checkout" "$SHARED/data/lotaru/chipseq_n1.csv not found (the CI layout; hack/install-deps.sh links it)"; false; }; then
  ln -s "$(cd "$SHARED" && pwd)" "$TMP/clone/shared"
  ln -s "$REPO_ROOT/sim/scenarios/nfcore5.yaml" "$TMP/linked.yaml"
  check "scenario from another directory" bash -c "cd / && '$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$(realpath --relative-to=/ "$REPO_ROOT")/sim/scenarios/nfcore5.yaml' | grep -q '^chipseq'"
  check "scenario through a symlink" bash -c "'$SIM' --cluster '$REPO_ROOT/sim/scenarios/cluster-555.yaml' --workload '$TMP/linked.yaml' | grep -q '^chipseq'"
  check "scenario in a clone with shared/ beside it" bash -c "cd '$TMP/clone/repo' && '$SIM' --cluster sim/scenarios/cluster-5442.yaml --workload sim/scenarios/nfcore5.yaml | grep -q '^eager'"
fi
out=$(cd "$TMP/bare/repo" && "$SIM" --cluster sim/scenarios/cluster-555.yaml --workload sim/scenarios/nfcore5.yaml 2>&1); rc=$?
if [ "$rc" = 1 ] && echo "$out" | qgrep "shared/data/lotaru/chipseq_n1.csv: cannot open measurement file: No such file" && echo "$out" | qgrep "resolved against the workload file's directory $(cd "$TMP/bare/repo/sim/scenarios" && pwd -P)"; then
  pass "missing lotaru data is a clear error"
else
  fail "missing lotaru data is a clear error" "rc=$rc: $out"
fi

# bad input: exit status 1 and a message naming the problem
bad() { # name pattern yaml
  printf '%s\n' "$3" > "$TMP/bad.yaml"
  local out; out=$("$SIM" --cluster "$FX/tiny-cluster.yaml" --workload "$TMP/bad.yaml" 2>&1); local rc=$?
  if [ "$rc" = 1 ] && echo "$out" | qgrep -- "$2"; then pass "$1"; else fail "$1" "rc=$rc: $out"; fi
}
bad "cycle is an error" "cycle among: A, B" 'workflows:
  - name: w
    processes:
      - {name: A, instances: 1, base_runtime: 1, after: [B]}
      - {name: B, instances: 1, base_runtime: 1, after: [A]}'
bad "repeated dependency is an error" "after names 'A' twice" 'workflows:
  - name: w
    processes:
      - {name: A, instances: 1, base_runtime: 1}
      - {name: B, instances: 1, base_runtime: 1, after: [A, A, A, A, A, A]}'
bad "oversized process is an error" "more than any node" 'workflows:
  - name: w
    processes: [{name: A, instances: 1, base_runtime: 1, requests: {cpu: 64}}]'
bad "unknown key is an error" "unknown key .runz." 'workflows:
  - name: w
    runz: 3
    processes: [{name: A, instances: 1, base_runtime: 1}]'
out=$("$SIM" --cluster "$FX/tiny-cluster.yaml" --workload "$FX/tiny-workload.yaml" --policy fastest 2>&1); rc=$?
if [ "$rc" = 1 ] && echo "$out" | qgrep fastest; then pass "unknown policy is an error"; else fail "unknown policy is an error" "rc=$rc: $out"; fi
out=$("$SIM" --cluster "$FX/tiny-cluster.yaml" --workload "$FX/tiny-workload.yaml" --seed -1 2>&1); rc=$?
if [ "$rc" = 2 ] && echo "$out" | qgrep "seed '-1'"; then pass "negative seed is refused"; else fail "negative seed is refused" "rc=$rc: $out"; fi
out=$("$SIM" --cluster "$TMP/missing.yaml" --workload "$FX/tiny-workload.yaml" 2>&1); rc=$?
if [ "$rc" = 1 ] && echo "$out" | qgrep missing.yaml; then pass "missing file is an error"; else fail "missing file is an error" "rc=$rc: $out"; fi
summary
