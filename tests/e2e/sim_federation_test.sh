#!/usr/bin/env bash
# sim_federation_test.sh: `tarema-sim federation` (the DAM paper's simulation): the JSON shape
# on both setups, greedy (the dam/rank code) beating random and round robin by a clear margin
# on both, the same figures for the same seed, and usage errors. No cluster.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
SIM="$BIN/tarema-sim"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# greedy at most 0.7x both baselines on setup 1 (paper: 0.48x), 0.85x on setup 2 (paper: 0.54x)
for setup in 1 2; do
  margin=0.7; [ $setup = 2 ] && margin=0.85
  check "setup $setup: json shape, greedy beats random and round robin clearly" bash -c "'$SIM' federation --setup $setup --json > '$TMP/s$setup.json' && python3 - '$TMP/s$setup.json' $setup $margin <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['setup'] == int(sys.argv[2]) and set(d) == {'setup', 'results'}, d
res = {r['strategy']: r for r in d['results']}
assert set(res) == {'greedy', 'random', 'round-robin'} and len(d['results']) == 3, res
for r in d['results']:
    assert set(r) == {'strategy', 'mean_s', 'stddev_s'}, r
    assert isinstance(r['mean_s'], float) and r['mean_s'] > 0 and r['stddev_s'] >= 0, r
g, m = res['greedy']['mean_s'], float(sys.argv[3])
for b in ('random', 'round-robin'):
    assert g <= m * res[b]['mean_s'], (g, b, res[b]['mean_s'])
    assert res['greedy']['stddev_s'] < res[b]['stddev_s'], (b, res)
PY"
done
check "setup 2 is harder for greedy than setup 1" bash -c "python3 -c 'import json; a=json.load(open(\"$TMP/s1.json\")); b=json.load(open(\"$TMP/s2.json\")); g=lambda d: [r for r in d[\"results\"] if r[\"strategy\"]==\"greedy\"][0][\"mean_s\"]; assert g(b) > g(a), (g(a), g(b))'"
check "same seed, same figures; another seed, other draws" bash -c "diff <('$SIM' federation --setup 1 --seed 5 --json) <('$SIM' federation --setup 1 --seed 5 --json) && ! diff -q <('$SIM' federation --setup 1 --seed 5 --json) <('$SIM' federation --setup 1 --seed 6 --json) >/dev/null"
check "greedy beats both on other seeds too" bash -c "for s in 2 3 4; do for setup in 1 2; do '$SIM' federation --setup \$setup --seed \$s --json | python3 -c 'import json,sys; r={x[\"strategy\"]: x[\"mean_s\"] for x in json.load(sys.stdin)[\"results\"]}; assert r[\"greedy\"] < 0.9 * min(r[\"random\"], r[\"round-robin\"]), r' || exit 1; done; done"
check "table: the paper's figures next to ours" bash -c "'$SIM' federation --setup 1 | grep -q '^greedy .* 93.602 *0.049'"
check "bad setup: usage error, exit 2" bash -c "'$SIM' federation --setup 3 2>&1 | grep -q 'expected 1 or 2'; '$SIM' federation --setup 3 2>/dev/null; [ \$? = 2 ]"
check "no setup: usage, exit 2" bash -c "'$SIM' federation 2>&1 | grep -q usage; '$SIM' federation 2>/dev/null; [ \$? = 2 ]"
check "bad seed: usage error, exit 2" bash -c "'$SIM' federation --setup 1 --seed -1 2>/dev/null; [ \$? = 2 ]"
summary
