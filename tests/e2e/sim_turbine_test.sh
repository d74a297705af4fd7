#!/usr/bin/env bash
# sim_turbine_test.sh: `tarema-sim turbine` as a user runs it (docs/planner.md, "The turbine
# example"): the JSON carries both strategies for every seed, planned steps start inside their
# windows with HPDA at LES's end, the summary is consistent with the seeds, the table and the SVG
# are written, bad options are refused. Needs no cluster or database.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
SIM="$BIN/tarema-sim"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

check "turbine --seeds 3 --json" bash -c "'$SIM' turbine --seeds 3 --json --svg '$TMP/t.svg' > '$TMP/r.json'"
check "json: both strategies per seed, planned in windows" python3 - "$TMP/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
seeds = d["seeds"]
assert [s["seed"] for s in seeds] == [1, 2, 3], seeds
for s in seeds:
    p, q = s["planned"], s["plain"]
    for st in ("LES", "HPDA"):
        assert p[st]["window_start_s"] <= p[st]["start_s"] < p[st]["window_end_s"], (s["seed"], st, p[st])
        assert "window_start_s" not in q[st], q[st]
    assert abs(p["HPDA"]["start_s"] - p["LES"]["end_s"]) < 1e-6, p
    assert abs(q["HPDA"]["ready_s"] - q["LES"]["end_s"]) < 1e-6, q
    assert abs(p["makespan_min"] - 45) < 1e-6, p
    assert q["makespan_min"] >= 45 - 1e-6, q
mean = sum(s["plain"]["makespan_min"] for s in seeds) / 3
assert abs(d["summary"]["plain"]["makespan_min"]["mean"] - mean) < 1e-6, d["summary"]
assert d["paper"] == {"planned_makespan_min": 16, "plain_makespan_min": 46}, d["paper"]
PY
check "svg written" grep -q '<svg' "$TMP/t.svg"
check "table names the paper" bash -c "'$SIM' turbine --seeds 2 | grep -q 'paper (WARP, Table 5): makespan 16 (planned) vs 46 (plain)'"
check "bad --seeds refused" bash -c "out=\$('$SIM' turbine --seeds 0 2>&1); [ \$? = 2 ] && grep -qF -- \"--seeds '0' is not a count\" <<<\"\$out\""
summary
