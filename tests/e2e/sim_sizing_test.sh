#!/usr/bin/env bash
# sim_sizing_test.sh: `tarema-sim sizing` as a user runs it: the JSON shape for every synthetic
# dataset, k-means and greedy beating the whole machine on each, the paper's whole-machine ATE
# row, determinism per seed, a lotaru CSV with per-process recommendations, the Figure 6 SVG,
# and bad input (unknown dataset, missing file, bad seed) giving a clear error. No cluster.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
SIM="$BIN/tarema-sim"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# whole-machine ATE of the paper's Table II per dataset (mean peak / 64 GB)
declare -A PAPER_ATE=([normal]=12.4 [uniform]=39.1 [exponential]=15.7 [bimodal]=31.3 [trimodal]=30.7)
for ds in normal uniform exponential bimodal trimodal; do
  check "$ds: json shape, kmeans and greedy beat the whole machine" bash -c "'$SIM' sizing --dataset $ds --json > '$TMP/$ds.json' && python3 - '$TMP/$ds.json' $ds ${PAPER_ATE[$ds]} <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['dataset'] == sys.argv[2], d['dataset']
want = {('whole-machine', None), ('double', None), ('declared', None)}
want |= {(s, l) for s in ('quantized', 'kmeans') for l in (1, 2, 3)}
want |= {(s, l) for s in ('greedy', 'exhaustive', 'vpa') for l in (1, 3)}
got = {(r['strategy'], r['level']) for r in d['results']}
assert got == want, got ^ want
for r in d['results']:
    assert set(r) >= {'strategy', 'level', 'wrr', 'ate'}, r
    assert isinstance(r['wrr'], float) and isinstance(r['ate'], float), r
    assert 0 < r['ate'] <= 100 and r['wrr'] <= 100, r
res = {(r['strategy'], r['level']): r for r in d['results']}
whole = res[('whole-machine', None)]
assert whole['wrr'] == 0 and abs(whole['ate'] - float(sys.argv[3])) < 0.6, whole
for s in ('kmeans', 'greedy'):
    for l in (1, 3):
        r = res[(s, l)]
        assert r['wrr'] > 0 and r['ate'] > whole['ate'], (s, l, r)
PY"
done

check "same seed, same figures; another seed, other draws" bash -c "diff <('$SIM' sizing --dataset bimodal --seed 3 --json) <('$SIM' sizing --dataset bimodal --seed 3 --json) && ! diff -q <('$SIM' sizing --dataset bimodal --seed 3 --json) <('$SIM' sizing --dataset bimodal --seed 4 --json) >/dev/null"
check "table names every strategy" bash -c "'$SIM' sizing --dataset trimodal > '$TMP/t.txt' && for s in whole-machine double declared quantized kmeans greedy exhaustive vpa; do grep -q \"^\$s \" '$TMP/t.txt' || exit 1; done"
check "svg: peaks and both panels' delimiters" bash -c "'$SIM' sizing --dataset bimodal --svg '$TMP/f6.svg' >/dev/null && grep -q '<svg' '$TMP/f6.svg' && [ \$(grep -c '<circle' '$TMP/f6.svg') = 4000 ] && grep -q 'quantized bucketing, 2 buckets' '$TMP/f6.svg' && grep -q 'kmeans bucketing, 2 buckets' '$TMP/f6.svg' && [ \$(grep -c '<polyline' '$TMP/f6.svg') -ge 4 ]"

LOTARU="$(lotaru_dir)/chipseq_n1.csv"
if need_lotaru; then # without the data: a failure naming it, never a skip
  check "lotaru csv: results and a recommendation per process within the machine" bash -c "'$SIM' sizing --dataset '$LOTARU' --json > '$TMP/l.json' && python3 - '$TMP/l.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['tasks'] > 0 and len(d['results']) == 15
recs = d['recommendations']
assert len(recs) == d['types'] and len(recs) > 1
for r in recs:
    m = r['memory']
    assert 0 < m['vpa'] <= 64 * 2**30 and m['greedy_buckets'][-1] == m['max'], r
    assert all(a < b for a, b in zip(m['greedy_buckets'], m['greedy_buckets'][1:])), r
PY"
fi

# a Nextflow trace (the fixture's first 20 rows; its later rows are deliberately malformed,
# and the simulator's reader refuses a file with a bad row, naming the line)
FXT="$REPO_ROOT/tests/fixtures/labeler/chipseq_trace_human.txt"
head -21 "$FXT" > "$TMP/trace.txt"
check "nextflow trace: two processes, recommendations" bash -c "'$SIM' sizing --dataset '$TMP/trace.txt' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"tasks\"] == 18 and d[\"types\"] == 2, d; assert len(d[\"recommendations\"]) == 2'"
check "malformed trace: error names the line" bash -c "'$SIM' sizing --dataset '$FXT' 2>&1 | grep -q 'chipseq_trace_human.txt:22:'"
check "unknown dataset: clear error, exit 1" bash -c "'$SIM' sizing --dataset gamma 2>&1 >/dev/null | grep -q \"cannot open\\|unknown dataset\"; '$SIM' sizing --dataset gamma >/dev/null 2>&1; [ \$? = 1 ]"
check "missing file: error names it" bash -c "'$SIM' sizing --dataset '$TMP/none.txt' 2>&1 | grep -q 'none.txt'"
check "bad seed: usage error, exit 2" bash -c "'$SIM' sizing --dataset normal --seed -1 2>/dev/null; [ \$? = 2 ]"
check "no dataset: usage, exit 2" bash -c "'$SIM' sizing 2>&1 | grep -q usage; '$SIM' sizing 2>/dev/null; [ \$? = 2 ]"
check "no dataset: the error says so" bash -c "'$SIM' sizing 2>&1 | grep -q -- '--dataset is required'"
check "a stray argument: exit 2, named" bash -c "'$SIM' sizing --dataset normal extra 2>&1 | grep -q \"unexpected argument 'extra'\" && { '$SIM' sizing --dataset normal extra >/dev/null 2>&1; [ \$? = 2 ]; }"
summary
