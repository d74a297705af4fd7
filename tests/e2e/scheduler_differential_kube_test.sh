#!/usr/bin/env bash
# tests/e2e/scheduler_differential_kube_test.sh: tarema-scheduler and the real kube-scheduler
# decide the same random pods on identical random clusters, on the real API server (issue 30):
# any pod one binds and the other leaves Pending fails the test and is printed as a reproducer
# (seed, nodes, placed pods, the pod). The generator and driver are
# tests/e2e/scheduler_differential_kube.py; DIFF_SEED, DIFF_PODS, DIFF_NODES and DIFF_BACKGROUND
# change the run (make test: a fixed seed, 150 pods on 8 nodes per set); DIFF_KEEP=FILE keeps every pod's record.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

SEED=${DIFF_SEED:-30}
PODS=${DIFF_PODS:-150}
sched_e2e_begin diff dk
KS_STARTED=
PROXY_PID=
extra_cleanup() {
  [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  kubectl delete namespace "$NS-k" "$NS-t" --wait=false >/dev/null 2>&1
  return 0
}
for ns in "$NS-k" "$NS-t"; do
  check "namespace $ns" kubectl create namespace "$ns"
  wait_for 30 kubectl get serviceaccount default -n "$ns" || fail "serviceaccount in $ns"
done
kube_scheduler_up
# Backfill off: it holds capacity for the head of the queue on purpose (docs/backfill.md), which
# kube-scheduler has no notion of; this test compares the decisions both make. With it on, a
# plan within the first batch held a node for one pod and kept another off it that
# kube-scheduler bound (seen once in a fresh-clone make test).
printf 'backfill: {reserveDepth: 0}\n' >"$WORK/sched.yaml"
sched_e2e_start --config "$WORK/sched.yaml"
kubectl proxy --address=127.0.0.1 --port=0 >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
proxy_port() { sed -n 's/^Starting to serve on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/proxy.log"; }
port_ok() { [ -n "$(proxy_port)" ]; }
if ! wait_for 30 port_ok; then fail "kubectl proxy serves on loopback" "$(cat "$WORK/proxy.log")"; summary; exit 1; fi

echo "# seed $SEED, $PODS pods (DIFF_SEED=$SEED reproduces this run)"
python3 "$(dirname "$0")/scheduler_differential_kube.py" --api "http://127.0.0.1:$(proxy_port)" \
  --seed "$SEED" --pods "$PODS" --nodes "${DIFF_NODES:-8}" --background "${DIFF_BACKGROUND:-15}" \
  --prefix "$P" --ns-k "$NS-k" --ns-t "$NS-t" --sched-t "$SCHED" >"$WORK/diff.jsonl" 2>"$WORK/diff.err"
rc=$?
[ -z "${DIFF_KEEP:-}" ] || cp "$WORK/diff.jsonl" "$DIFF_KEEP" # the whole record, for a closer look
if [ $rc != 0 ]; then
  fail "differential driver ran" "exit $rc: $(tail -n 3 "$WORK/diff.err") $(grep '"kind": "error"' "$WORK/diff.jsonl" | head -n 2)"
  summary
  exit 1
fi
sum=$(grep '"kind": "summary"' "$WORK/diff.jsonl")
if [ -z "$sum" ]; then fail "differential driver summary" "$(tail -n 3 "$WORK/diff.err")"; summary; exit 1; fi
read -r bound pending disagree undecided refused < <(jq -r '"\(.bound) \(.pending) \(.disagree) \(.undecided) \(.refused)"' <<<"$sum")
echo "# $PODS pods: both bound $bound, both Pending $pending, disagree $disagree, undecided $undecided, refused by the API server $refused"
# every disagreement is a failure of its own, with its reproducer
while IFS= read -r line; do
  i=$(jq -r .i <<<"$line")
  fail "pod p-$i decided alike (kube-scheduler: $(jq -r .kube <<<"$line"); tarema: $(jq -r .tarema <<<"$line"))" \
    "reproducer: $(jq -c '{seed, pod, nodes, placed}' <<<"$line")"
done < <(jq -c 'select(.kind == "pod" and (.result == "disagree" or .result == "undecided"))' "$WORK/diff.jsonl")
if [ "$disagree" = 0 ] && [ "$undecided" = 0 ]; then
  pass "all $((bound + pending)) pods decided alike by kube-scheduler and tarema-scheduler"
fi
# a run where (nearly) everything binds, or nothing does, compares nothing worth comparing
total=$((bound + pending + disagree + undecided))
if [ "$total" -gt 0 ] && [ $((bound * 10)) -ge "$total" ] && [ $((pending * 10)) -ge "$total" ]; then
  pass "the random pods exercise both outcomes (bound $bound, Pending $pending of $total)"
else
  fail "the random pods exercise both outcomes" "bound $bound, Pending $pending of $total"
fi
summary
