#!/usr/bin/env bash
# sim_gang_test.sh: gangs and reservations through tarema-sim as a user runs them: the
# sim/scenarios/gang-resv.yaml scenario on real lotaru data (a gang of 10 MACS2 tasks holding a
# window in each chipseq run, eager beside it): the Gantt SVG draws the held capacity as hatched
# bars (an SVG pattern) behind the tasks, the JSON carries the gang waits and the reservation
# figures (held vs used core-s) consistent with each other; the gang's tasks start together, on
# the held nodes; bad input names the step and the field; a window evicts the task that overran
# into it (counted in the table and the JSON) unless evict_overrunning is false, with or without
# --preemption; with --preemption a gang of higher priority evicts across nodes what it needs and
# starts whole, and a running gang a single task preempts is evicted whole (table and JSON).
# Needs no cluster or database.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
SIM="$BIN/tarema-sim"
SC="$REPO_ROOT/sim/scenarios"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# the scenario's relative paths, pointed at the data wherever it is; without the data the test
# fails naming it (need_lotaru), it never skips
lotaru_scenario gang-resv "$TMP/gang-resv.yaml"
if need_lotaru; then
  check "scenario runs with a gantt" bash -c "'$SIM' --cluster '$SC/cluster-555.yaml' --workload '$TMP/gang-resv.yaml' --gantt '$TMP/g.svg' --json > '$TMP/r.json'"
  check "svg defines the hatch pattern" grep -q '<pattern id="resv-hatch"' "$TMP/g.svg"
  check "svg fills reservations with it" grep -q 'class="reservation"[^>]*fill="url(#resv-hatch)"' "$TMP/g.svg"
  check "reservations drawn before the tasks" bash -c "awk '/class=\"reservation\"/{r=NR} /<title>chipseq:/{if(!t)t=NR} END{exit !(r && t && r < t)}' '$TMP/g.svg'"
  check "json gang and reservation figures" python3 - "$TMP/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g, r = d["gangs"], d["reservations"]
assert g["count"] == 3 and g["started"] == 3, g
assert all(x["size"] == 10 and x["wait_s"] >= 0 for x in g["list"]), g
assert r["admitted"] + r["failed"] == 3, r
assert r["held_core_s"] > 0 and 0 < r["used_core_s"] <= r["held_core_s"], r
close = lambda a, b: abs(a - b) <= 1e-6 * max(1.0, abs(a))  # the JSON keeps 10 digits
held = sum(x["held_core_s"] for x in r["list"] if x["phase"] != "Failed")
assert close(held, r["held_core_s"]), (held, r["held_core_s"])
for x in r["list"]:
    assert x["phase"] in ("Released", "Expired", "Failed"), x   # nothing left held
    if x["phase"] != "Failed":
        assert sum(n["pods"] for n in x["nodes"]) == 10, x
        assert x["start_s"] <= x["released_s"] <= x["end_s"], x
        span = x["released_s"] - x["start_s"]
        assert close(x["held_core_s"], sum(n["cores"] for n in x["nodes"]) * span), x
PY
  check "table summary lines" bash -c "'$SIM' --cluster '$SC/cluster-555.yaml' --workload '$TMP/gang-resv.yaml' | grep -E '^gangs: 3 started of 3' && '$SIM' --cluster '$SC/cluster-555.yaml' --workload '$TMP/gang-resv.yaml' | grep -E '^reservations: 3 admitted .* held [0-9]+ core-s, used [0-9]+ core-s'"
  check "isolate keeps the figures" bash -c "'$SIM' --cluster '$SC/cluster-555.yaml' --workload '$TMP/gang-resv.yaml' --isolate --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"gangs\"][\"count\"]==3 and d[\"reservations\"][\"admitted\"]+d[\"reservations\"][\"failed\"]==3'"
fi

cat > "$TMP/c.yaml" <<'EOF2'
node_types:
  - {name: a, count: 2, cores: 4, memory: 8Gi, bench: {cpu: 300, mem: 10000, io: 500}}
EOF2
bad() { # name, process line, expected message part
  printf 'workflows:\n  - name: w\n    requests: {cpu: 2, memory: 1Gi}\n    processes:\n%s\n' "$2" > "$TMP/w.yaml"
  check "$1" bash -c "out=\$('$SIM' --cluster '$TMP/c.yaml' --workload '$TMP/w.yaml' 2>&1); rc=\$?; echo \"\$out\"; [ \$rc = 1 ] && grep -qF -- '$3' <<<\"\$out\""
}
bad "gang 0" "      - {name: mpi, gang: 0, runtime: {a: 5}}" "process mpi: gang must be from 1 to 1000000 tasks, got 0"
bad "gang larger than the cluster" "      - {name: mpi, gang: 9, runtime: {a: 5}}" "process mpi: gang 9 is larger than the cluster: at most 4 tasks"
bad "reservation larger than the cluster" "      - {name: st, instances: 6, runtime: {a: 5}, reservation: {start: 1, duration: 5}}" "process st: reservation for 6 tasks is larger than the cluster"
bad "negative offset" "      - {name: st, instances: 1, runtime: {a: 5}, reservation: {start: -1, duration: 5}}" "process st: reservation: start must not be negative"
bad "evict_overrunning not a boolean" "      - {name: st, instances: 1, runtime: {a: 5}, reservation: {start: 1, duration: 5, evict_overrunning: maybe}}" "process st: reservation: evict_overrunning must be true or false"

# A window evicts the task that overran into it (evict_overrunning, default true), as the live
# scheduler: one node of 4 cores; hog declares 40 s but runs 200, step holds the node 50..350.
# Evicted: step runs 50..70, hog again 70..270. Kept: step waits for hog, 200..220.
cat > "$TMP/c1.yaml" <<'EOF2'
node_types:
  - {name: a, count: 1, cores: 4, memory: 8Gi, bench: {cpu: 300, mem: 10000, io: 500}}
EOF2
overrun() { # evict_overrunning clause, file
  printf 'workflows:\n  - name: w\n    requests: {cpu: 2, memory: 1Gi}\n    processes:\n      - {name: hog, instances: 1, runtime: {a: 200}, walltime: 40}\n      - {name: step, instances: 1, requests: {cpu: 4, memory: 1Gi}, runtime: {a: 20}, reservation: {start: 50, duration: 300%s}}\n' "$1" > "$2"
}
overrun "" "$TMP/o.yaml"
overrun ", evict_overrunning: false" "$TMP/k.yaml"
check "overrun evicted: table line" bash -c "'$SIM' --cluster '$TMP/c1.yaml' --workload '$TMP/o.yaml' --ideal | grep -qx 'reservation windows evicted 1 overrunning task (work lost and redone)'"
for pre in "" "--preemption"; do
  check "overrun evicted ${pre:-without --preemption}: json" bash -c "'$SIM' --cluster '$TMP/c1.yaml' --workload '$TMP/o.yaml' --ideal $pre --json | python3 -c '
import json, sys
d = json.load(sys.stdin); r = d[\"reservations\"]
assert d[\"overrun_evictions\"] == 1 and d[\"evictions\"] == 0, d
assert r[\"overrun_evictions\"] == 1 and r[\"list\"][0][\"overrun_evictions\"] == 1, r
assert abs(r[\"list\"][0][\"released_s\"] - 70) < 1e-6 and abs(d[\"horizon_s\"] - 270) < 1e-6, d'"
done
check "evict_overrunning false keeps it" bash -c "out=\$('$SIM' --cluster '$TMP/c1.yaml' --workload '$TMP/k.yaml' --ideal --json); python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d[\"overrun_evictions\"] == 0 and abs(d[\"horizon_s\"] - 220) < 1e-6, d' \"\$out\" && ! '$SIM' --cluster '$TMP/c1.yaml' --workload '$TMP/k.yaml' --ideal | grep -q 'overrunning'"

# --preemption with gangs (docs/simulation.md, "Priorities and preemption"): two nodes of 4
# cores full of 1-core tasks at priority 0; a gang of two 3-core tasks at 1000 arrives at 5 and
# evicts three tasks on each node (6), then runs 5..15 whole. Without --preemption it waits
# until 100. A single 4-core task at 1000 evicts a running gang of two 4-core tasks whole.
printf 'workflows:\n  - name: low\n    requests: {cpu: 1, memory: 1Gi}\n    processes:\n      - {name: b, instances: 8, runtime: {a: 100}}\n  - name: hi\n    priority: 1000\n    arrivals: [5]\n    requests: {cpu: 3, memory: 1Gi}\n    processes:\n      - {name: g, instances: 2, gang: 2, runtime: {a: 10}}\n' > "$TMP/gp.yaml"
printf 'workflows:\n  - name: low\n    requests: {cpu: 4, memory: 1Gi}\n    processes:\n      - {name: g, instances: 2, gang: 2, runtime: {a: 100}}\n  - name: urgent\n    priority: 1000\n    arrivals: [5]\n    requests: {cpu: 4, memory: 1Gi}\n    processes:\n      - {name: u, instances: 1, runtime: {a: 10}}\n' > "$TMP/tp.yaml"
check "gang preempts: table line" bash -c "'$SIM' --cluster '$TMP/c.yaml' --workload '$TMP/gp.yaml' --ideal --preemption | grep -qx 'preemption: 0 tasks and 1 gangs placed by evicting 6 tasks of lower priority, 0 running gangs whole among them (their work lost and redone)'"
check "gang preempts: json" bash -c "'$SIM' --cluster '$TMP/c.yaml' --workload '$TMP/gp.yaml' --ideal --preemption --json | python3 -c '
import json, sys
d = json.load(sys.stdin); g = d[\"gangs\"][\"list\"][0]
assert d[\"gang_preemptions\"] == 1 and d[\"evictions\"] == 6 and d[\"gang_evictions\"] == 0, d
assert d[\"preemptions\"] == 0 and abs(g[\"start_s\"] - 5) < 1e-6 and abs(d[\"horizon_s\"] - 115) < 1e-6, d'"
check "gang without --preemption waits" bash -c "'$SIM' --cluster '$TMP/c.yaml' --workload '$TMP/gp.yaml' --ideal --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"evictions\"] == 0 and d[\"gang_preemptions\"] == 0 and abs(d[\"gangs\"][\"list\"][0][\"start_s\"] - 100) < 1e-6, d'"
check "task evicts a gang whole" bash -c "'$SIM' --cluster '$TMP/c.yaml' --workload '$TMP/tp.yaml' --ideal --preemption --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"preemptions\"] == 1 and d[\"gang_evictions\"] == 1 and d[\"evictions\"] == 2, d
assert abs(d[\"gangs\"][\"list\"][0][\"start_s\"] - 15) < 1e-6, d'"
summary
