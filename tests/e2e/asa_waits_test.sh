#!/usr/bin/env bash
# tests/e2e/asa_waits_test.sh: the learned queue waits on the real control plane and PostgreSQL
# (issue 18, docs/asa.md):
#  1. pending pods get tarema.io/predicted-start (queued-at + the estimate; the default for a
#     shape never seen);
#  2. waits of pods bound by the real kube-scheduler and by tarema-scheduler land in PostgreSQL
#     per shape, measured from creation, or from the ungating for a pod that had gates, and a
#     gang's once, with its member count;
#  3. `tarema-planner waits` shows them;
#  4. a labeler restart re-lists every pod and counts none twice; the learner goes on from the
#     stored state;
#  5. a corrupt row is ignored with a warning (planner and labeler), and replaced on the shape's
#     next wait;
#  6. once learned, a new pending pod's prediction is queued-at + the learned estimate, and
#     `tarema-scheduler explain` shows it;
#  7. a row locked past the feed's lock timeout: the waits are stored once it is free;
#  8. a held pod (the order gate tarema.io/after-predecessors alone: in tarema's queue) waits from
#     when it was held; one bound at its release is not fed (its wait is censored).
# Pods wait for a node label this test sets, on its own tainted kwok node.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): its labeler annotates pending pods of every namespace; wait bounds of a few seconds
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
cd "$REPO_ROOT"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

ID=$SCHED_E2E_ID
NS=asa-e2e-$ID
NODE=asa${ID}
SCHED=tarema-asa-$ID
WORK=$(mktemp -d)
LPID=
KS_STARTED=
cleanup() {
  [ -n "$LPID" ] && kill "$LPID" 2>/dev/null && wait "$LPID" 2>/dev/null
  stop_schedulers
  [ -n "$KS_STARTED" ] && bash hack/cluster.sh scheduler stop >/dev/null 2>&1
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl delete node "${NODE}-1" --wait=false >/dev/null 2>&1 || true
  psql "$DATABASE_URL" -qAtc "DELETE FROM asa_waits WHERE namespace = '$NS'" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# sql QUERY: its rows; nothing and status 1 when psql fails (read_ok: a failed query is no "no row")
sql() { read_ok psql "$DATABASE_URL" -qAtc "$1"; }
# observations of shape CPU_MILLI MEM_BYTES [PODS]
obs() { sql "SELECT observations FROM asa_waits WHERE namespace = '$NS' AND cpu_milli = $1 AND memory_bytes = $2 AND pods = ${3:-1}"; }
# obs_is N CPU_MILLI MEM_BYTES [PODS]: the shape's observations are N. For wait_for: a
# `wait_for T test "$(obs ...)" = N` expands obs once, before wait_for runs, and never re-polls.
obs_is() { [ "$(obs "${@:2}")" = "$1" ]; }
# no_obs CPU_MILLI MEM_BYTES [PODS]: the query ran and the shape has no row
no_obs() { local o; o=$(obs "$@") && [ -z "$o" ]; }
# probe_after_restart CPU_MILLI: a pod of a shape of its own created after a labeler restart; once
# its wait is stored, the restarted feed has been through its re-list (the informer delivers the
# list before later events): the positive condition for the negative checks after a restart,
# instead of a fixed sleep. The probe's pod and row are deleted again.
probe_after_restart() {
  local m=$1 bytes=$(($1 * 1048576))
  pod "probe$1" "${m}m" "${m}Mi"
  wait_for 30 obs_is 1 "$m" "$bytes" || { fail "a pod after the restart has its wait stored (shape ${m}m)" "obs '$(obs "$m" "$bytes" 2>&1)'"; return 1; }
  kubectl delete pod -n "$NS" "probe$1" --wait=false >/dev/null
  wait_for 30 bash -c "! kubectl get pod -n $NS probe$1 >/dev/null 2>&1"
  sql "DELETE FROM asa_waits WHERE namespace = '$NS' AND cpu_milli = $m" >/dev/null
}
state() { sql "SELECT state FROM asa_waits WHERE namespace = '$NS' AND cpu_milli = $1 AND memory_bytes = $2 AND pods = ${3:-1}"; }
ann() { kubectl get pod -n "$NS" "$1" -o json | jq -r --arg k "$2" '.metadata.annotations[$k] // ""'; }
epoch() { date -u -d "$1" +%s; }
# pod NAME CPU MEM [SCHEDULER] [GANG] [GATED]: a pod that waits for the node label open=ID
# (GATED: yes = the gate tarema.io/e2e; proactive = a proactive step's two gates)
pod() {
  pod_json "$NS" "$1" "${4:-default-scheduler}" "$2" "$3" '{}' "$ID" |
    jq -c --arg id "$ID" --arg gang "${5:-}" --arg gated "${6:-}" '
      .spec.nodeSelector = {("asa-e2e-open"): $id}
      | if $gang != "" then .metadata.labels = {"scheduling.x-k8s.io/pod-group": $gang} else . end
      | if $gated == "yes" then .spec.schedulingGates = [{name: "tarema.io/e2e"}] else . end
      | if $gated == "proactive" then .spec.schedulingGates = [{name: "tarema.io/planned"},
          {name: "tarema.io/after-predecessors"}] else . end' |
    kubectl create -f - >/dev/null
}
# drop_gate NAME GATE: removes one gate, keeps the others (as the planner does)
drop_gate() {
  local g
  g=$(kubectl get pod -n "$NS" "$1" -o json | jq -c --arg g "$2" '[.spec.schedulingGates[]? | select(.name != $g)]')
  kubectl patch pod -n "$NS" "$1" --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/schedulingGates\", \"value\": $g}]" >/dev/null
}
all_bound() { [ "$(bound_count "$NS")" = "$1" ]; }
bound_count_is() { all_bound "$1"; }
connected() { [ "$(grep -c "waits feed: database connected" "$WORK/labeler.log")" -gt "$1" ]; }
start_labeler() { # waits until this start's feed has read the learned state
  local before
  before=$(grep -c "waits feed: database connected" "$WORK/labeler.log" 2>/dev/null || true)
  "$BIN/tarema-labeler" serve --bind 127.0.0.1 --port 0 --spool "$WORK/spool" --no-publish \
    --groups tests/fixtures/labeler/groups_3.json --waits >>"$WORK/labeler.log" 2>&1 &
  LPID=$!
  wait_for 20 connected "${before:-0}"
}

command -v kubectl >/dev/null && command -v jq >/dev/null ||
  { fail "kubectl and jq in PATH"; summary; exit 1; }
if ! bash hack/cluster.sh status 2>/dev/null | qgrep "scheduler  *running"; then
  bash hack/cluster.sh scheduler start >"$WORK/ks.log" 2>&1 && KS_STARTED=1
fi
check "kube-scheduler runs" bash -c "bash hack/cluster.sh status | grep -q 'scheduler  *running'"
kubectl create namespace "$NS" >/dev/null
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${NODE}, count: 1, cpu: 32, memory: 64Gi, pods: 50,
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "own node created" bash hack/cluster.sh nodes "$WORK/nodes.yaml"
start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" >/dev/null 2>&1 ||
  fail "tarema-scheduler starts" "$(tail -n 5 "$WORK/sched.log")"
if start_labeler; then pass "labeler --waits starts"; else fail "labeler --waits starts" "$(tail -5 "$WORK/labeler.log")"; fi

# ---- 1. predictions on pending pods --------------------------------------------------------
pod k1 300m 300Mi
pod k2 300m 300Mi
pod k3 300m 300Mi
pod t1 200m 200Mi "$SCHED"
pod ga 100m 100Mi default-scheduler gang-a
pod gb 100m 100Mi default-scheduler gang-a
pod gated 400m 400Mi default-scheduler "" yes
wait_for 20 bash -c "[ -n \"\$(kubectl get pod -n $NS k1 -o jsonpath='{.metadata.annotations.tarema\\.io/predicted-start}')\" ]"
start=$(ann k1 tarema.io/predicted-start) queued=$(ann k1 tarema.io/queued-at)
check "pending pod annotated with its predicted start" test -n "$start"
check "unknown shape: predicted start = queued-at + the default 0 s" test "$start" = "$queued"
check "the prediction names its source" test "$(ann k1 tarema.io/predicted-wait)" = "0s default"
check "tarema's pending pod annotated too" test -n "$(ann t1 tarema.io/predicted-start)"
check "a gated pod gets no prediction" test -z "$(ann gated tarema.io/predicted-start)"
wait_for 10 bash -c "[ -n \"\$(kubectl get pod -n $NS gb -o jsonpath='{.metadata.annotations.tarema\\.io/predicted-start}')\" ]"
check "a gang's members share one prediction, queued when its last member was" \
  test -n "$(ann ga tarema.io/queued-at)" -a "$(ann ga tarema.io/queued-at)" = "$(ann gb tarema.io/queued-at)" \
  -a "$(ann ga tarema.io/predicted-start)" = "$(ann gb tarema.io/predicted-start)" \
  -a "$(epoch "$(ann gb tarema.io/queued-at)")" = "$(epoch "$(kubectl get pod -n "$NS" gb -o jsonpath='{.metadata.creationTimestamp}')")"

# ---- 2. waits observed -----------------------------------------------------------------------
sleep 8
kubectl patch pod -n "$NS" gated --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
ungated=$(date +%s)
sleep 6
kubectl label node "${NODE}-1" "asa-e2e-open=$ID" >/dev/null
check "all 7 pods bound (kube-scheduler and tarema)" wait_for 60 all_bound 7
check "3 waits of the kube-scheduler shape stored" wait_for 20 obs_is 3 300 314572800
check "tarema's pod's wait stored" wait_for 10 obs_is 1 200 209715200
check "the gang's wait stored once, as a 2-pod shape" wait_for 10 obs_is 1 100 104857600 2
check "no gang member counted alone" no_obs 100 104857600 1
w_k=$(state 300 314572800 | jq '.stats.wait_max_s')
w_g=$(state 400 419430400 | jq '.stats.last_wait_s')
check "kube-scheduler pods waited from creation to the label (>= 14 s, got $w_k)" test "${w_k%.*}" -ge 14
check "the gated pod's wait counts from its ungating (<= 9 s, got $w_g)" test "${w_g%.*}" -le 9

# ---- 3. tarema-planner waits -----------------------------------------------------------------
"$BIN/tarema-planner" waits --namespace "$NS" --json >"$WORK/waits.json" 2>"$WORK/waits.err"
check "tarema-planner waits --json lists the 4 shapes" test "$(jq '.shapes | length' "$WORK/waits.json")" = 4
est=$(jq '[.shapes[] | select(.cpu_milli == 300)][0].estimate_s' "$WORK/waits.json")
check "the learned estimate is a grid value near the waits (got $est)" \
  python3 -c "import sys; e=float('$est'); sys.exit(0 if 10 <= e <= 100 else 1)"
check "hit ratio and over-prediction overhead reported" \
  jq -e '.shapes[0] | has("hit_ratio") and has("miss_ratio") and (.over_prediction | has("core_hours")) and (.distribution | has("p50_s"))' "$WORK/waits.json"
"$BIN/tarema-planner" waits --namespace "$NS" >"$WORK/waits.txt" 2>&1
check "table shows the namespace" grep -q "^$NS" "$WORK/waits.txt"
"$BIN/tarema-planner" waits "$NS" >"$WORK/stray.txt" 2>&1
rc=$?
check "a stray argument exits 2 naming it (got $rc)" \
  bash -c "[ $rc = 2 ] && grep -q \"unexpected argument '$NS'\" '$WORK/stray.txt'"

# ---- 4. restart: nothing counted twice, the learner goes on -----------------------------------
before=$(state 300 314572800 | jq -c '[.cases, .samples, .p[0:5]]')
kill "$LPID"; wait "$LPID" 2>/dev/null; LPID=
start_labeler || fail "labeler restarts" "$(tail -5 "$WORK/labeler.log")"
probe_after_restart 700
counts="$(obs 300 314572800)/$(obs 200 209715200)/$(obs 100 104857600 2)"
check "after a restart (re-listing every bound pod) nothing is counted twice (got $counts, want 3/1/1)" \
  test "$counts" = "3/1/1"
check "the stored learner is unchanged by the restart" test "$(state 300 314572800 | jq -c '[.cases, .samples, .p[0:5]]')" = "$before"
pod k4 300m 300Mi
check "a new wait after the restart is the 4th of its shape" wait_for 20 obs_is 4 300 314572800
check "the learner went on from the stored state (cases 4)" test "$(state 300 314572800 | jq .cases)" = 4
check "after the restart no gang member was counted alone (a re-list delivers them one by one)" \
  no_obs 100 104857600 1

# ---- 5. a corrupt row -------------------------------------------------------------------------
sql "UPDATE asa_waits SET state = '{\"version\":1,\"p\":[\"NaN\"' WHERE namespace = '$NS' AND cpu_milli = 200"
"$BIN/tarema-planner" waits --namespace "$NS" --json >"$WORK/waits2.json" 2>"$WORK/waits2.err"
check "tarema-planner waits warns about the corrupt row" grep -q "asa_waits row ignored (namespace $NS" "$WORK/waits2.err"
n2=$(jq '.shapes | length' "$WORK/waits2.json")
check "and lists the others (got $n2 of 3: $(cat "$WORK/waits2.err"))" test "$n2" = 3
pod t2 200m 200Mi "$SCHED"
# The corrupt row still says 1 observation (the UPDATE left that column): "afresh" is 1
# observation in a state that parses again (rewritten by t2's wait); a learner that went on from
# the old count would store 2.
fresh_row() { [ "$(state 200 209715200 | jq -r .version 2>/dev/null)" = 1 ] && obs_is 1 200 209715200; }
check "the corrupt row's shape starts afresh on its next wait" wait_for 20 fresh_row
check "the labeler warned about it" wait_for 20 grep -q "asa_waits row ignored (namespace $NS, node group '', 1 pods of 200m" "$WORK/labeler.log"
check "the fresh row is readable again" test "$(state 200 209715200 | jq .version)" = 1

# ---- 6. a prediction from the learned estimate ------------------------------------------------
kubectl label node "${NODE}-1" asa-e2e-open- >/dev/null
pod k5 300m 300Mi
wait_for 20 bash -c "[ -n \"\$(kubectl get pod -n $NS k5 -o jsonpath='{.metadata.annotations.tarema\\.io/predicted-start}')\" ]"
learned=$(sql "SELECT estimate_s FROM asa_waits WHERE namespace = '$NS' AND cpu_milli = 300")
s5=$(ann k5 tarema.io/predicted-start) q5=$(ann k5 tarema.io/queued-at)
check "learned shape: predicted start = queued-at + the learned estimate ($q5 + $learned s = $s5)" \
  test "$(( $(epoch "$s5") - $(epoch "$q5") ))" = "${learned%.*}"
check "the prediction says it is learned" grep -q "learned" <<<"$(ann k5 tarema.io/predicted-wait)"
"$BIN/tarema-scheduler" explain "$NS/k5" >"$WORK/explain.txt" 2>&1
check "tarema-scheduler explain shows the predicted start" grep -q "^predicted start: $s5 (.*queued at $q5, estimated wait ${learned%.*}s learned)" "$WORK/explain.txt"

# ---- 7. a row locked past the feed's lock timeout (5 s): the waits are stored once it is free -
n7=$(obs 300 314572800)
psql "$DATABASE_URL" -qAt >/dev/null 2>&1 <<SQL &
BEGIN;
SELECT 1 FROM asa_waits WHERE namespace = '$NS' AND cpu_milli = 300 FOR UPDATE;
SELECT pg_sleep(8);
COMMIT;
SQL
lockpid=$!
sleep 1
kubectl label node "${NODE}-1" "asa-e2e-open=$ID" >/dev/null
pod k6 300m 300Mi
check "k5 and k6 bound while the row is locked" wait_for 20 all_bound 11
wait "$lockpid"
check "their waits are stored once the lock is gone ($n7 + 2, not lost to the lock timeout)" \
  wait_for 20 obs_is $((n7 + 2)) 300 314572800

# ---- 8. held pods (a proactive step's: the order gate alone after ungateAt) -------------------
# h1 is released while the node is open: bound at its release, its wait is censored (not fed).
# h2 is held for 15 s, released while the node is closed and bound 5 s (or more) later: its wait
# counts from when it was held (>= 15 + 5 s; from its release it would be 5-12 s).
pod h1 500m 500Mi default-scheduler "" proactive
pod h2 600m 600Mi default-scheduler "" proactive
sleep 1
drop_gate h1 tarema.io/planned
drop_gate h2 tarema.io/planned
held=$(date +%s)
sleep 5
drop_gate h1 tarema.io/after-predecessors
check "h1 bound at its release" wait_for 20 bound_count_is 12
kubectl label node "${NODE}-1" asa-e2e-open- >/dev/null
sleep $((held + 15 - $(date +%s)))
drop_gate h2 tarema.io/after-predecessors
sleep 5
kubectl label node "${NODE}-1" "asa-e2e-open=$ID" >/dev/null
check "h2 bound once the node is open again" wait_for 20 bound_count_is 13
check "h2's wait stored" wait_for 20 obs_is 1 600 629145600
w_h2=$(state 600 629145600 | jq '.stats.last_wait_s')
check "a held pod's wait counts from when it was held, not from its release (>= 19 s, got $w_h2)" \
  test "${w_h2%.*}" -ge 19
check "a held pod bound at its release is not fed (its wait is censored; got $(obs 500 524288000) observations)" \
  no_obs 500 524288000
# a restarted labeler never saw h1 held: without its claim it would count h1 from its creation
kill "$LPID"; wait "$LPID" 2>/dev/null; LPID=
start_labeler || fail "labeler restarts (2)" "$(tail -5 "$WORK/labeler.log")"
probe_after_restart 800
check "after a restart the censored h1 is still not fed (got $(obs 500 524288000) observations)" \
  no_obs 500 524288000
check "after a restart h2 is not fed again (got $(obs 600 629145600))" test "$(obs 600 629145600)" = 1
summary
