#!/usr/bin/env bash
# planner_turbine_test.sh: a small WARP turbine experiment on the kwok cluster
# (bench/turbine_kwok.sh, docs/planner.md "The turbine example on the kwok cluster"): one seed,
# 1 simulated minute = 1 s, 20 minutes of WARP's background load on two pools of 14 nodes,
# LES 2 nodes 5 min then HPDA 5 nodes 10 min, through tarema-planner run and tarema-scheduler.
# Checks: both runs succeed; planned, LES starts when its window opens and HPDA when LES ends
# (within 2 s: the planner's 1 s tick and kwok's start), never before it; plain (no
# reservations) does not beat the planned makespan; results.json and both Gantt SVGs written.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
if ! command -v kubectl >/dev/null || ! kubectl get --raw /readyz >/dev/null 2>&1; then
  fail "cluster reachable" "eval \"\$(bash hack/cluster.sh env)\" first"
  summary
  exit 1
fi
check "bench/turbine_kwok.sh (1 seed, small)" bash -c "REPO_ROOT='$REPO_ROOT' TAREMA_BIN='$BIN' bash '$REPO_ROOT/bench/turbine_kwok.sh' \
  --seeds 1 --first-seed 1 --scale 1 --warmup 20 --les 2:5 --hpda 5:10 --out '$W' >'$W/run.log' 2>&1 || { tail -n 20 '$W/run.log'; exit 1; }"
python3 - "$W/results.json" >"$W/py.out" 2>&1 <<'PY'
import json, sys
def report(name, problems):
    print(("not ok - " + name + "".join("\n    " + p for p in problems)) if problems else "ok - " + name)
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    report("results.json readable", [str(e)]); sys.exit(0)
s = d["seeds"][0]
p, q = s["planned"], s["plain"]
report("both runs Succeeded", [] if (p["phase"], q["phase"]) == ("Succeeded", "Succeeded") else ["planned %s, plain %s" % (p["phase"], q["phase"])])
les, hpda = p["LES"], p["HPDA"]
pr = []
if None in (les["start"], les["end"], hpda["start"], hpda["end"], les["window_start"]):
    pr.append("missing times: %s" % p)
else:
    if not (les["window_start"] - 1e-9 <= les["start"] <= les["window_start"] + 2):
        pr.append("LES started at +%gs, its window opened at +%gs" % (les["start"], les["window_start"]))
    if hpda["start"] < les["end"]:
        pr.append("HPDA started at +%gs before LES ended at +%gs" % (hpda["start"], les["end"]))
    if hpda["start"] > les["end"] + 2:
        pr.append("HPDA started at +%gs, %gs after LES ended at +%gs" % (hpda["start"], hpda["start"] - les["end"], les["end"]))
report("planned: LES at its window, HPDA when LES ends (<= 2 s)", pr)
report("plain does not beat planned (makespan)",
       [] if q.get("makespan_min", -1) >= p.get("makespan_min", 1e9) - 1 else
       ["plain %s < planned %s" % (q.get("makespan_min"), p.get("makespan_min"))])
print("# planned: makespan %s, HPDA wait %s; plain: makespan %s, HPDA wait %s (simulated minutes)" % (
    p.get("makespan_min"), p.get("hpda_wait_min"), q.get("makespan_min"), q.get("hpda_wait_min")))
PY
cat "$W/py.out"
E2E_PASSED=$((E2E_PASSED + $(grep -c '^ok - ' "$W/py.out")))
E2E_FAILED=$((E2E_FAILED + $(grep -c '^not ok - ' "$W/py.out")))
check "Gantt SVGs of both runs" bash -c "grep -q '<svg' '$W/turbine-s1-planned.svg' && grep -q '<svg' '$W/turbine-s1-plain.svg'"
summary
