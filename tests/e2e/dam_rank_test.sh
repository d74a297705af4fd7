#!/usr/bin/env bash
# dam_rank_test.sh: `tarema-dam rank` as a user runs it, offline over a clusters file: the JSON
# shape with every score, the hand-checked choice, the architecture exclusion, maintenance
# (overlapping windows merged, the job's end running into one), an unreachable cluster excluded
# while the ranking still answers, failover, and bad input naming the field. No cluster.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
DAM="$BIN/tarema-dam"
FX="$REPO_ROOT/tests/fixtures/dam"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# it4i-barbora: load 1/(1+1000/4000) = 0.8, perf 523/523 = 1, run 7200*450/523 = 6195.0 s,
# wait 6195/(6195+600) = 0.9117, data: 40Gi over 100Mi/s = 409.6 s -> x = 0.0661, e^-x = 0.936
check "json: every score, barbora chosen, lrz-arm excluded for its architecture" bash -c "'$DAM' rank '$FX/job-wrf.yaml' --clusters '$FX/clusters.yaml' --json > '$TMP/r.json' && python3 - '$TMP/r.json' <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d['chosen'] == 'it4i-barbora', d['chosen']
assert [r['cluster'] for r in d['ranking']] == ['it4i-barbora', 'lrz-linux'], d['ranking']
b = d['ranking'][0]
assert set(b['scores']) == {'load', 'perf', 'wait', 'data'}, b
assert abs(b['scores']['load'] - 0.8) < 1e-9 and abs(b['scores']['perf'] - 1) < 1e-9, b
run = 7200 * 450 / 523
assert abs(b['run_s'] - run) < 1e-6 and abs(b['scores']['wait'] - run / (run + 600)) < 1e-9, b
x = 40 * 2**30 / (100 * 2**20) / run
assert abs(b['data_x'] - x) < 1e-9 and abs(b['scores']['data'] - math.exp(-x)) < 1e-9, b
assert abs(b['mean'] - sum(b['scores'].values()) / 4) < 1e-9, b
assert b['wait_source'] == 'pending-age' and d['ranking'][1]['wait_source'] == 'predicted'
l = d['ranking'][1]   # node groups: (200*369 + 200*467) / 400 = 418 events/s per core
assert abs(l['scores']['perf'] - 418 / 523) < 1e-9 and l['data_x'] == 0, l
ex = {e['cluster']: e for e in d['excluded']}
assert ex['lrz-arm']['kind'] == 'architecture' and 'amd64' in ex['lrz-arm']['reason'], ex
PY"
check "table: every score column and the chosen cluster" bash -c "'$DAM' rank '$FX/job-wrf.yaml' --clusters '$FX/clusters.yaml' > '$TMP/t.txt' && grep -q '^1 *it4i-barbora' '$TMP/t.txt' && grep -q 'load *perf *wait *data' '$TMP/t.txt' && grep -q '^chosen: it4i-barbora' '$TMP/t.txt' && grep -q '^excluded lrz-arm: architecture' '$TMP/t.txt'"

check "maintenance merged and masked, unreachable excluded, ranking still answers" bash -c "'$DAM' rank '$FX/job-wrf.yaml' --clusters '$FX/clusters-maintenance.yaml' --json > '$TMP/m.json' && python3 - '$TMP/m.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['chosen'] == 'slow', d
ex = {e['cluster']: e for e in d['excluded']}
f = ex['fast']
assert f['kind'] == 'maintenance' and f['windows_merged'] == 1, f
assert '2026-11-23T22:15:00Z' in f['reason'] and '2026-11-24T02:00:00Z' in f['reason'], f
assert 'expected end 2026-11-23T22:30:00Z' in f['reason'], f
assert ex['gone']['kind'] == 'unreachable' and 'connection refused' in ex['gone']['reason'], ex
PY"
check "--now after the windows: the fast cluster is back" bash -c "'$DAM' rank '$FX/job-wrf.yaml' --clusters '$FX/clusters-maintenance.yaml' --now 2026-11-24T03:00:00Z --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"chosen\"] == \"fast\", d'"

# node groups exactly as tarema-profiler writes them (tests/fixtures/labeler/groups_3.json is the
# profiler's output, checked by labeler_groups_pipe_test): the groups list goes in as it is
NG="$REPO_ROOT/tests/fixtures/labeler/groups_3.json"
python3 - "$NG" "$FX/clusters.yaml" > "$TMP/g.yaml" <<'PY'
import json, sys
groups = json.load(open(sys.argv[1]))['groups']
text = open(sys.argv[2]).read()
start = text.index('    node_groups:')
end = text.index('    wait: {predicted: 30m}')
print(text[:start] + '    node_groups: ' + json.dumps(groups) + chr(10) + text[end:], end='')
PY
check "node groups from the profiler's real output: cores-weighted cpu_single" bash -c "'$DAM' rank '$FX/job-wrf.yaml' --clusters '$TMP/g.yaml' --json > '$TMP/g.json' && python3 - '$NG' '$TMP/g.json' <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))['groups']
perf = sum(x['total_cores'] * x['centroid']['cpu_single'] for x in g) / sum(x['total_cores'] for x in g)
d = json.load(open(sys.argv[2]))
l = [r for r in d['ranking'] if r['cluster'] == 'lrz-linux'][0]
assert abs(l['scores']['perf'] - perf / 523.0) < 1e-9, (l, perf)
assert abs(l['run_s'] - 7200 * 450 / perf) < 1e-6, (l, perf)
PY"

sed 's/^datasets: \[era5-italy\]/datasets: [era5-italy]\nfailed_on: [it4i-barbora]/' "$FX/job-wrf.yaml" > "$TMP/failed.yaml"
check "failover: a job that failed on barbora goes to lrz-linux" bash -c "'$DAM' rank '$TMP/failed.yaml' --clusters '$FX/clusters.yaml' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"chosen\"] == \"lrz-linux\", d; assert any(e[\"kind\"] == \"banned\" for e in d[\"excluded\"])'"

sed 's/^cores: 64/cores: 100000/' "$FX/job-wrf.yaml" > "$TMP/huge.yaml"
check "no cluster qualifies: exit 3, chosen null" bash -c "'$DAM' rank '$TMP/huge.yaml' --clusters '$FX/clusters.yaml' --json > '$TMP/h.json'; [ \$? = 3 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"chosen\"] is None and len(d[\"excluded\"]) == 3' '$TMP/h.json'"

# bad input: exit 1 and the message names the field
bad() { # NAME SED-EXPRESSION FILE(job|clusters) EXPECTED
  local f=$FX/clusters.yaml j=$FX/job-wrf.yaml
  if [ "$3" = job ]; then sed "$2" "$j" > "$TMP/bad.yaml"; j=$TMP/bad.yaml
  else sed "$2" "$f" > "$TMP/bad.yaml"; f=$TMP/bad.yaml; fi
  check "bad input: $1" env EXP="$4" J="$j" F="$f" DAM="$DAM" bash -c 'out=$("$DAM" rank "$J" --clusters "$F" 2>&1 >/dev/null); rc=$?; [ $rc = 1 ] && printf "%s" "$out" | grep -qF -- "$EXP" || { echo "rc=$rc $out"; exit 1; }'
}
bad "unknown dataset" 's/^datasets: \[era5-italy\]/datasets: [era5-italy, gfs]/' job "job.datasets[1]: unknown dataset 'gfs'"
bad "malformed cores" 's/cores: {used: 1000, total: 4000}/cores: {used: lots, total: 4000}/' clusters "clusters[1].cores.used: expected a number"
bad "used above total" 's/cores: {used: 300, total: 400}/cores: {used: 500, total: 400}/' clusters "clusters[0].cores.used: 500 is more than cores.total 400"
bad "unknown key" 's/^    perf_per_core: 523.0/    perf_per_core: 523.0\n    speed: 9/' clusters "speed"
bad "malformed window time" 's/^    architectures: \[arm64\]/    architectures: [arm64]\n    maintenance: [{start: tomorrow, end: 2026-11-24T02:00:00Z}]/' clusters "clusters[2].maintenance[0].start: 'tomorrow'"
bad "window ending before it starts" 's/^    architectures: \[arm64\]/    architectures: [arm64]\n    maintenance: [{start: 2026-11-24T02:00:00Z, end: 2026-11-24T01:00:00Z}]/' clusters "clusters[2].maintenance[0].end: not after its start"
bad "malformed runtime" 's/^runtime: 2h/runtime: 2 hours/' job "job.runtime: '2 hours' is not a duration"
bad "negative weight" 's/^weights: {load: 1, perf: 1, wait: 1, data: 1}/weights: {load: 1, perf: -1, wait: 1, data: 1}/' clusters "weights.perf"
bad "missing job cores" '/^cores: 64/d' job "job.cores: missing"
check "missing clusters file: error names it" bash -c "'$DAM' rank '$FX/job-wrf.yaml' --clusters '$TMP/none.yaml' 2>&1 | grep -q 'none.yaml'"
check "no --clusters: usage, exit 2" bash -c "'$DAM' rank '$FX/job-wrf.yaml' 2>&1 | grep -q usage; '$DAM' rank '$FX/job-wrf.yaml' 2>/dev/null; [ \$? = 2 ]"
check "serve --port abc: named, exit 2 (atoi made it 0, a random port)" bash -c "out=\$('$DAM' serve --federation x --port abc 2>&1); rc=\$?; [ \$rc = 2 ] && grep -q \"\-\-port: 'abc' is not an integer from 0 to 65535\" <<<\"\$out\""
check "serve --cluster-timeout-seconds 10s: named, exit 2" bash -c "out=\$('$DAM' serve --federation x --cluster-timeout-seconds 10s 2>&1); rc=\$?; [ \$rc = 2 ] && grep -q 'cluster-timeout-seconds' <<<\"\$out\""
summary
