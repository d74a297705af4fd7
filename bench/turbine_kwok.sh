#!/usr/bin/env bash
# bench/turbine_kwok.sh: WARP's turbine experiment (section 6, Table 5) on the kwok cluster,
# through the real controller (`tarema-planner run`) and tarema-scheduler (docs/planner.md,
# "The turbine example on the kwok cluster").
#
#   eval "$(bash hack/cluster.sh env)"
#   bash bench/turbine_kwok.sh [--seeds 3] [--first-seed 1] [--scale 2] [--warmup 60]
#                              [--nodes 14] [--les 2:15] [--hpda 5:30] [--out DIR]
#
# Two pools of --nodes kwok nodes (36 cores, 192Gi, as WARP's partition), each with its own
# namespace and `tarema-planner run` (--node-selector the pool), one tarema-scheduler for both.
# Per seed, bench/turbine_load.py starts WARP's background load, the same jobs on both pools at
# the same instants; after --warmup simulated minutes the turbine workflow (LES then HPDA, whole
# nodes: one 30-core pod per node) is submitted to both: planned (the planner's reservations)
# and plain (every step `mode: on-completion`: its pods ungated when its predecessor succeeded,
# no reservation, as a WMS submitting step by step). Time is compressed: one simulated minute
# lasts --scale seconds (walltimes, arrivals, the planner's slot). Jobs and steps run their
# walltime minus one second (kwok's start latency; they declare the full walltime). Prints
# progress, then per seed the makespan (LES start to HPDA end), submit-to-end and HPDA's wait
# after LES, in simulated minutes; writes DIR/results.json and a Gantt SVG per seed and pool
# (`tarema-planner gantt`). Everything it created is deleted at the end.
set -uo pipefail
REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BIN=${TAREMA_BIN:-$REPO_ROOT/bin}
SEEDS=3 FIRST=1 SCALE=2 WARMUP=60 NODES=14 LES=2:15 HPDA=5:30 OUT="" TIMEOUT_MIN=400
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --seeds) SEEDS=$2; shift 2 ;;
    --first-seed) FIRST=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --les) LES=$2; shift 2 ;;
    --hpda) HPDA=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench/turbine_kwok.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for v in SEEDS FIRST SCALE WARMUP NODES; do
  [[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || { echo "bench/turbine_kwok.sh: --${v,,} '${!v}' is not a positive integer" >&2; exit 2; }
done
for v in LES HPDA; do
  [[ ${!v} =~ ^[0-9]+:[0-9]+$ ]] || { echo "bench/turbine_kwok.sh: --${v,,} '${!v}' is not PODS:MINUTES" >&2; exit 2; }
done
command -v kubectl >/dev/null && kubectl get --raw /readyz >/dev/null 2>&1 ||
  { echo "bench/turbine_kwok.sh: no cluster: eval \"\$(bash hack/cluster.sh env)\"" >&2; exit 1; }
ID=${TURBINE_ID:-$$}
OUT=${OUT:-$(mktemp -d /tmp/turbine-kwok.XXXXXX)}
mkdir -p "$OUT"
NSP=tb-planned-$ID NSQ=tb-plain-$ID SCHED=tb-sched-$ID LABEL=turbine-$ID
PIDS=()
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  kubectl delete namespace "$NSP" "$NSQ" --wait=false >/dev/null 2>&1
  kubectl get nodes -o name -l "$LABEL" 2>/dev/null | xargs -r kubectl delete --wait=false >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- set-up: CRDs, namespaces, two pools of nodes, the scheduler and two planners ---
for f in tarema.io_workflows scheduling.x-k8s.io_podgroups tarema.io_reservations; do
  kubectl apply -f "$REPO_ROOT/charts/tarema/crds/$f.yaml" >/dev/null || exit 1
done
kubectl wait --for condition=established --timeout=30s crd/workflows.tarema.io \
  crd/podgroups.scheduling.x-k8s.io crd/reservations.tarema.io >/dev/null || exit 1
kubectl create namespace "$NSP" >/dev/null && kubectl create namespace "$NSQ" >/dev/null || exit 1
cat >"$OUT/nodes.yaml" <<Y
nodes:
  - {prefix: tbp$ID, count: $NODES, cpu: 36, memory: 192Gi, pods: 20, labels: {$LABEL: planned}}
  - {prefix: tbq$ID, count: $NODES, cpu: 36, memory: 192Gi, pods: 20, labels: {$LABEL: plain}}
Y
bash "$REPO_ROOT/hack/cluster.sh" nodes "$OUT/nodes.yaml" >/dev/null || exit 1
log "pools: $NODES nodes each ($LABEL=planned, $LABEL=plain); 1 simulated minute = $SCALE s"
"$BIN/tarema-scheduler" --port 0 --scheduler-name "$SCHED" --namespaces "$NSP,$NSQ" >"$OUT/scheduler.log" 2>&1 &
PIDS+=($!)
for pool in planned plain; do
  ns=$([ $pool = planned ] && echo "$NSP" || echo "$NSQ")
  "$BIN/tarema-planner" run --slot "${SCALE}s" --tick 1s --time-limit 2s --cycle 10m \
    --scheduler-name "$SCHED" --namespace "$ns" --node-selector "$LABEL=$pool" \
    --lease-namespace "$ns" --leader-elect false --require-admission true \
    --identity "turbine-$pool-$ID" >"$OUT/planner-$pool.log" 2>&1 &
  PIDS+=($!)
done
sleep 2

# workflow FILE NAME MODE: the turbine workflow, walltimes compressed
workflow() {
  local lp=${LES%%:*} lm=${LES##*:} hp=${HPDA%%:*} hm=${HPDA##*:} mode=""
  [ -n "$3" ] && mode="    mode: $3"
  cat >"$1" <<Y
name: $2
steps:
  - name: LES
    pods: $lp
    requests: {cpu: 30, memory: 8Gi}
    duration: $((lm * SCALE))s
    image: les:1.0
    annotations: {tarema.io/duration: $((lm * SCALE - 1))s}
$mode
  - name: HPDA
    after: [LES]
    pods: $hp
    requests: {cpu: 30, memory: 8Gi}
    duration: $((hm * SCALE))s
    image: hpda:1.0
    annotations: {tarema.io/duration: $((hm * SCALE - 1))s}
$mode
Y
}
phase() { kubectl -n "$1" get workflow "$2" -o jsonpath='{.status.phase}' 2>/dev/null; }
busy_nodes() { # busy_nodes POOL: nodes of the pool running a pod
  kubectl get pods -A --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null |
    grep -c "^tb$([ "$1" = planned ] && echo p || echo q)$ID-"
}

: >"$OUT/runs.jsonl"
for seed in $(seq "$FIRST" $((FIRST + SEEDS - 1))); do
  wf=turbine-s$seed
  log "seed $seed: background load starts (warm-up $WARMUP simulated minutes = $((WARMUP * SCALE)) s)"
  python3 "$REPO_ROOT/bench/turbine_load.py" --seed "$seed" --scale "$SCALE" --until "$TIMEOUT_MIN" \
    --pool "$NSP:$SCHED:$LABEL=planned" --pool "$NSQ:$SCHED:$LABEL=plain" >"$OUT/load-s$seed.log" 2>&1 &
  LOAD=$!
  PIDS+=($LOAD)
  for ((t = 0; t < WARMUP * SCALE; t += 10)); do
    sleep $((WARMUP * SCALE - t < 10 ? WARMUP * SCALE - t : 10))
    log "seed $seed: warm-up $(((t + 10) / SCALE))/$WARMUP min, $(grep -c '^load' "$OUT/load-s$seed.log") jobs, busy nodes planned $(busy_nodes planned) plain $(busy_nodes plain)"
  done
  workflow "$OUT/$wf-planned.yaml" "$wf" "${TURBINE_PLANNED_MODE:-}" # a mode only to check the check
  workflow "$OUT/$wf-plain.yaml" "$wf" on-completion
  "$BIN/tarema-planner" submit "$OUT/$wf-planned.yaml" -n "$NSP" --wait 10s >"$OUT/$wf-planned.plan" 2>&1 &
  s1=$!
  "$BIN/tarema-planner" submit "$OUT/$wf-plain.yaml" -n "$NSQ" --wait 10s >"$OUT/$wf-plain.plan" 2>&1 &
  s2=$!
  wait "$s1" "$s2"
  log "seed $seed: submitted; busy nodes planned $(busy_nodes planned) plain $(busy_nodes plain); plan: $(grep -E '^step|^makespan' "$OUT/$wf-planned.plan" | tr '\n' ';')"
  deadline=$((SECONDS + (3 * (${LES##*:} + ${HPDA##*:}) + 240) * SCALE))
  while [ $SECONDS -lt $deadline ]; do
    p=$(phase "$NSP" "$wf") q=$(phase "$NSQ" "$wf")
    case "$p/$q" in Succeeded/Succeeded | Failed/* | */Failed) break ;; esac
    sleep 5
    log "seed $seed: planned $p, plain $q"
  done
  kill "$LOAD" 2>/dev/null
  wait "$LOAD" 2>/dev/null
  "$BIN/tarema-planner" gantt "$wf" -n "$NSP" --node-selector "$LABEL=planned" --svg "$OUT/$wf-planned.svg" >/dev/null 2>&1 || log "seed $seed: gantt (planned) failed"
  "$BIN/tarema-planner" gantt "$wf" -n "$NSQ" --node-selector "$LABEL=plain" --svg "$OUT/$wf-plain.svg" >/dev/null 2>&1 || log "seed $seed: gantt (plain) failed"
  kubectl -n "$NSP" get workflow "$wf" -o json >"$OUT/$wf-planned.json"
  kubectl -n "$NSP" get pods -o json >"$OUT/$wf-planned-pods.json" 2>/dev/null # where everything ran
  kubectl -n "$NSQ" get pods -o json >"$OUT/$wf-plain-pods.json" 2>/dev/null
  kubectl -n "$NSP" get events -o json >"$OUT/$wf-planned-events.json" 2>/dev/null
  kubectl -n "$NSQ" get workflow "$wf" -o json >"$OUT/$wf-plain.json"
  python3 - "$seed" "$SCALE" "$OUT/$wf-planned.json" "$OUT/$wf-plain.json" >>"$OUT/runs.jsonl" <<'PY'
import json, sys
from datetime import datetime
seed, scale = int(sys.argv[1]), float(sys.argv[2])
def ts(s): return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp() if s else None
out = {"seed": seed}
for key, path in (("planned", sys.argv[3]), ("plain", sys.argv[4])):
    w = json.load(open(path))
    st = {s["name"]: s for s in w.get("status", {}).get("steps", [])}
    sub = ts(w["metadata"]["creationTimestamp"])
    r = {"phase": w.get("status", {}).get("phase")}
    for n in ("LES", "HPDA"):
        s = st.get(n, {})
        r[n] = {k: ts(s.get(f)) for k, f in (("start", "actualStart"), ("end", "actualEnd"),
                                               ("window_start", "start"), ("window_end", "end"))}
    les, hpda = r["LES"], r["HPDA"]
    if None not in (les["start"], les["end"], hpda["start"], hpda["end"]):
        r["makespan_min"] = (hpda["end"] - les["start"]) / scale
        r["submit_to_end_min"] = (hpda["end"] - sub) / scale
        r["hpda_wait_min"] = (hpda["start"] - les["end"]) / scale
        r["les_wait_min"] = (les["start"] - sub) / scale
    for n in ("LES", "HPDA"):  # seconds after submission
        r[n] = {k: (v - sub if v is not None else None) for k, v in r[n].items()}
    out[key] = r
print(json.dumps(out))
PY
  tail -n 1 "$OUT/runs.jsonl" | python3 -c 'import json,sys
d = json.load(sys.stdin)
f = lambda r, k: "%6.1f" % r[k] if k in r else "     -"
for k in ("planned", "plain"):
    r = d[k]
    print("seed %d %-7s %-9s makespan %s submit-to-end %s HPDA wait %s (min)" % (d["seed"], k, r["phase"], f(r, "makespan_min"), f(r, "submit_to_end_min"), f(r, "hpda_wait_min")))'
  log "seed $seed: cleaning up"
  kubectl -n "$NSP" delete workflow --all --wait=false >/dev/null 2>&1
  kubectl -n "$NSQ" delete workflow --all --wait=false >/dev/null 2>&1
  kubectl -n "$NSP" delete pods --all --grace-period=0 --wait=false >/dev/null 2>&1
  kubectl -n "$NSQ" delete pods --all --grace-period=0 --wait=false >/dev/null 2>&1
  for _ in $(seq 60); do
    [ "$(kubectl get pods -n "$NSP" -o name 2>/dev/null | wc -l)$(kubectl get pods -n "$NSQ" -o name 2>/dev/null | wc -l)" = 00 ] &&
      [ "$(kubectl get reservations -n "$NSP" -o name 2>/dev/null | wc -l)" = 0 ] && break
    sleep 1
  done
done

python3 - "$OUT/runs.jsonl" "$OUT/results.json" "$SCALE" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
summ = {}
for k in ("planned", "plain"):
    for m in ("makespan_min", "submit_to_end_min", "hpda_wait_min"):
        xs = [r[k][m] for r in runs if m in r[k]]
        if xs:
            summ.setdefault(k, {})[m] = {"mean": statistics.mean(xs), "sd": statistics.pstdev(xs),
                                         "min": min(xs), "max": max(xs), "n": len(xs)}
json.dump({"scale_s_per_min": float(sys.argv[3]), "seeds": runs, "summary": summ,
           "paper": {"planned_makespan_min": 16, "plain_makespan_min": 46}}, open(sys.argv[2], "w"), indent=1)
for k, s in summ.items():
    print("%-7s " % k + ", ".join("%s %.1f (sd %.1f, %.1f-%.1f)" % (m, v["mean"], v["sd"], v["min"], v["max"]) for m, v in s.items()))
print("paper (WARP, Table 5): makespan 16 (planned) vs 46 (plain) minutes")
PY
log "results: $OUT/results.json, Gantt charts: $OUT/*.svg"
