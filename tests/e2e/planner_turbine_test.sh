#!/usr/bin/env bash
# planner_turbine_test.sh: a small WARP turbine experiment on the kwok cluster
# (bench/turbine_kwok.sh, docs/planner.md "The turbine example on the kwok cluster"): one seed,
# 1 simulated minute = 1 s, 20 minutes of WARP's background load on two pools of 14 nodes,
# LES 2 nodes 5 min then HPDA 5 nodes 10 min, through tarema-planner run and tarema-scheduler.
# Checks: both runs succeed; planned, LES starts when its window opens, HPDA's window opens
# within a slot (1 s) of LES's end (steps run their walltime minus 1 s, the window is whole
# slots) and HPDA starts then, never before LES ended; plain (no reservations) does not beat the
# planned makespan by more than HPDA's start latency below, and planned beats plain whenever
# plain's HPDA waited longer than that (CI saw plain 13 vs planned 15 with a 1 s allowance: plain
# ungates HPDA at the tick after LES's end, planned waits one link more); both Gantt SVGs (tarema-planner gantt
# --node-selector) show the 14 nodes of their own pool. Without reservations
# (TURBINE_PLANNED_MODE=on-completion) the planned check was seen failing: HPDA started 4 s
# after LES ended.
# Start latency allowed, from the protocol (times are whole seconds, so 1 s of rounding):
#   LES, planned to start now: the tick that plans it creates its Reservation, the scheduler
#     admits and activates it, the next tick sees it active and ungates the pods, they bind and
#     kwok starts them: 2 ticks + 1 s (bind, kwok) + 1 s (rounding) = 4 s. Measured on an idle
#     machine 2 s (3 of 3 runs: planned +0.7 s, admitted +1.2, active +1.8, released and bound
#     +2.8), in CI 3 s (one run: the 2 s allowed before failed there). Since the planner ticks
#     at once when a Reservation turns active, 1-2 s (planned +1.0, admitted +1.5, active,
#     released and bound +2.2); the bound keeps the two ticks, which the protocol allows.
#   HPDA, already admitted: the tick after LES's end sees it succeed and ungates HPDA:
#     1 tick + 1 s + 1 s = 3 s after LES's end (or its window, whichever is later).
# On failure the Workflow and Reservation events (planned, admitted, released, bound) are
# printed, to show which link was late.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): start-latency bounds of a few seconds (see above)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
if ! command -v kubectl >/dev/null || ! kubectl get --raw /readyz >/dev/null 2>&1; then
  fail "cluster reachable" "eval \"\$(bash hack/cluster.sh env)\" first"
  summary
  exit 1
fi
ID=e2e$$
check "bench/turbine_kwok.sh (1 seed, small)" bash -c "TURBINE_ID=$ID REPO_ROOT='$REPO_ROOT' TAREMA_BIN='$BIN' bash '$REPO_ROOT/bench/turbine_kwok.sh' \
  --seeds 1 --first-seed 1 --scale 1 --warmup 20 --les 2:5 --hpda 5:10 --out '$W' >'$W/run.log' 2>&1 || { tail -n 20 '$W/run.log'; exit 1; }"
TICK=1 python3 - "$W/results.json" "$W/turbine-s1-planned-events.json" "$W/turbine-s1-planned.json" >"$W/py.out" 2>&1 <<'PY'
import json, os, sys
from datetime import datetime
TICK = float(os.environ["TICK"])
LES_LATENCY, HPDA_LATENCY = 2 * TICK + 2, TICK + 2  # see the header
SCALE = 1.0  # --scale 1: one simulated minute lasts 1 s
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
    if not (les["window_start"] - 1e-9 <= les["start"] <= les["window_start"] + LES_LATENCY):
        pr.append("LES started at +%gs, its window opened at +%gs (allowed: up to %gs after)" % (les["start"], les["window_start"], LES_LATENCY))
    if hpda["start"] < les["end"]:
        pr.append("HPDA started at +%gs before LES ended at +%gs" % (hpda["start"], les["end"]))
    if hpda["window_start"] is None or hpda["window_start"] > les["end"] + 1:
        pr.append("HPDA's window opened at +%ss, over a slot after LES ended at +%gs" % (hpda["window_start"], les["end"]))
    if hpda["start"] > max(les["end"], hpda["window_start"] or 0) + HPDA_LATENCY:
        pr.append("HPDA started at +%gs, %gs after LES ended at +%gs (allowed: %gs)" % (hpda["start"], hpda["start"] - les["end"], les["end"], HPDA_LATENCY))
if pr:  # which link of the chain was late: the planned run's events, seconds after submission
    try:
        def ts(e):  # events.k8s.io events carry eventTime (microseconds), core ones lastTimestamp
            t = e.get("eventTime") or e.get("lastTimestamp") or ""
            return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else None
        evs = json.load(open(sys.argv[2]))["items"]
        sub = datetime.fromisoformat(json.load(open(sys.argv[3]))["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
        for e in sorted((e for e in evs if ts(e) is not None), key=ts):
            o = e["involvedObject"]
            if o["name"].startswith("turbine-s1") and (o["kind"] != "Pod" or e["reason"] == "Scheduled"):
                pr.append("event +%.1fs %s %s %s: %s" % (ts(e) - sub, o["kind"], o["name"], e["reason"], e["message"][:90]))
    except Exception as ex:
        pr.append("events unreadable: %s" % ex)
report("planned: LES at its window, HPDA's window within a slot of LES's end and HPDA at it (start latency as in the header)", pr)
# Plain against planned: plain's HPDA is ungated by the tick that sees LES succeed, planned's
# also waits for its window to open and its Reservation to turn active, so when HPDA's nodes
# happen to be free at LES's end (most seeds; docs/planner.md) plain may start it up to the
# protocol's latency sooner. So: planned within that latency of plain always, and strictly
# better whenever plain had to wait longer than it (HPDA's nodes busy at LES's end).
pm, qm, qw = p.get("makespan_min"), q.get("makespan_min"), q.get("hpda_wait_min")
if None in (pm, qm, qw):
    cmp = ["makespans missing: planned %s, plain %s, plain HPDA wait %s" % (pm, qm, qw)]
elif qw * SCALE > HPDA_LATENCY:
    cmp = [] if pm < qm else ["plain waited %g for HPDA's nodes, yet planned %g is not below plain %g" % (qw, pm, qm)]
else:
    cmp = [] if pm <= qm + HPDA_LATENCY / SCALE else ["planned %g over plain %g plus the latency allowed (%g)" % (pm, qm, HPDA_LATENCY / SCALE)]
report("plain does not beat planned beyond the start latency; planned wins when plain waited", cmp)
print("# planned: makespan %s, HPDA wait %s; plain: makespan %s, HPDA wait %s (simulated minutes)" % (
    p.get("makespan_min"), p.get("hpda_wait_min"), q.get("makespan_min"), q.get("hpda_wait_min")))
PY
cat "$W/py.out"
E2E_PASSED=$((E2E_PASSED + $(grep -c '^ok - ' "$W/py.out")))
E2E_FAILED=$((E2E_FAILED + $(grep -c '^not ok - ' "$W/py.out")))
# gantt --node-selector: one row per node of the run's own pool, no other node of the cluster
gantt_rows() { python3 -c 'import re,sys; print(" ".join(sorted(re.findall(r"<text x=\"10\" y=\"[0-9]+\">([^<]+)</text>", open(sys.argv[1]).read()))))' "$1"; }
export -f gantt_rows
for pool in planned:tbp plain:tbq; do
  f=$W/turbine-s1-${pool%%:*}.svg
  want=$(for i in $(seq 1 14); do echo "${pool##*:}$ID-$i"; done | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
  check "Gantt SVG of the ${pool%%:*} run: the 14 nodes of its pool" bash -c "grep -q '<svg' '$f' && [ \"\$(gantt_rows '$f')\" = '$want' ] || { echo \"rows: \$(gantt_rows '$f')\"; exit 1; }"
done
summary
