#!/usr/bin/env bash
# tests/e2e/scheduler_extender_bind_test.sh: the extender's Reserve (issue 32: in extender mode
# "two pods passed in the same second may together use more of a shadow's spare than one alone
# could"). The real kube-scheduler with tarema as its extender and binder (bindVerb: bind,
# tarema-scheduler --extender-bind, backfill resolution 10 s so that no new plan comes between
# two binds). One 8-core kwok node of this test's own:
#   - run-a (4 cores, 45 s) runs; wide (6 cores) waits: its shadow starts at run-a's expected
#     end and leaves 2 cores of the node spare then;
#   - with kube-scheduler paused, n1 and n2 (2 cores, 300 s each: both still running at the
#     shadow's start) wait. Each alone fits the spare, and /filter passes both, since the plan
#     sees a bound pod only at the next plan. tarema's /bind is called for them as kube-scheduler
#     calls it: n1 binds, and n2 is refused, the node held for wide (without the Reserve both
#     bound and wide waited for one of them: 300 s);
#   - kube-scheduler resumed, n2 stays Pending (its FailedScheduling names wide) and wide binds
#     within 10 s of its expected start, through tarema's /bind.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): needs kube-scheduler stopped, runs and restarts it with an extender config
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/backfill_lib.sh"

bf_extender_begin extbind xk
echo "backfill: {reserveDepth: 1, resolution: 10s}" >"$WORK/ext.yaml"
# kube-scheduler is paused below while its calls could be in flight: none may time out
EXTENDER_BIND=1 EXTENDER_HTTP_TIMEOUT=120s extender_setup "$PROFILE" --config "$WORK/ext.yaml" --extender-bind
EXT_PORT=$SCHED_PORT
TLS=$REPO_ROOT/tests/fixtures/tls
MTLS=(--cacert "$TLS/ca.crt" --cert "$TLS/client.crt" --key "$TLS/client.key")
NODE=$(kubectl get nodes -l "tarema.io/e2e-set=$SET" -o jsonpath='{.items[0].metadata.name}')

# (run-a's end rounded up to the 10 s resolution, as Slurm's bf_resolution rounds)
bf_run_then_wide 4 45 6 30 15
binds() { grep -c "bind refused" "$WORK/ext.log"; }

KS_PID=$(cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid" 2>/dev/null)
if [ -z "$KS_PID" ] || ! kill -STOP "$KS_PID"; then
  fail "kube-scheduler paused" "no pid in $TAREMA_CLUSTER_DIR/run/scheduler.pid, or kill -STOP failed"
  KS_PID=
  summary
  exit 1
fi
pod n1 2 300s | kubectl create -f - >/dev/null
pod n2 2 300s | kubectl create -f - >/dev/null
# tarema's informer has both waiting once a plan counted three jobs (wide, n1, n2)
three() { grep -q "backfill: planned jobs=3 " "$WORK/ext.log"; }
check "tarema plans wide, n1 and n2 (kube-scheduler paused)" wait_for 30 three
filter_for() {
  jq -cn --argjson pod "$(kubectl get pod -n "$NS" "$1" -o json)" --arg node "$NODE" '{Pod: $pod, NodeNames: [$node]}' |
    curl -sf --max-time 10 "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d @- "https://127.0.0.1:$EXT_PORT/filter"
}
passes() { filter_for "$1" | jq -e --arg n "$NODE" '(.NodeNames // []) | index($n) != null' >/dev/null; }
bind_of() {
  jq -cn --arg ns "$NS" --arg name "$1" --arg uid "$(kubectl get pod -n "$NS" "$1" -o jsonpath='{.metadata.uid}')" --arg node "$NODE" \
    '{PodName: $name, PodNamespace: $ns, PodUID: $uid, Node: $node}' |
    curl -sf --max-time 10 "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d @- "https://127.0.0.1:$EXT_PORT/bind"
}
# as kube-scheduler would, had it filtered both before binding either
if passes n1 && passes n2; then pass "/filter passes n1 and n2, each alone"; else fail "/filter passes n1 and n2" "n1 $(filter_for n1); n2 $(filter_for n2)"; fi
a1=$(bind_of n1) a2=$(bind_of n2)
if [ "$(jq -r .Error <<<"$a1")" = "" ] && wait_for 10 is_bound n1; then
  pass "/bind n1: bound"
else
  fail "/bind n1: bound" "$a1; node '$(bound_at n1)'"
fi
if jq -r .Error <<<"$a2" | qgrep "held for pod $NS/wide" && ! is_bound n2; then
  pass "/bind n2: refused, $(jq -r .Error <<<"$a2")"
else
  fail "/bind n2: refused, the node held for wide" "$a2; node '$(bound_at n2)'"
fi
kill -CONT "$KS_PID"
KS_PID=
held() { failed_event n2 "held for pod $NS/wide"; }
if wait_for 30 held && ! is_bound n2; then
  pass "kube-scheduler resumed: n2 stays Pending, held for pod $NS/wide"
else
  fail "n2 stays Pending, held for wide" "node '$(bound_at n2)'; events: $(notes n2)"
fi
if wait_for 60 is_bound wide; then
  T_W=$(date +%s)
  late=$((T_W - es))
  [ "$late" -le 10 ] && pass "wide bound within 10 s of its expected start ($late s)" ||
    fail "wide bound within 10 s of its expected start" "$late s late"
else
  fail "wide binds once run-a has ended" "$(kubectl get pods -n "$NS" -o wide 2>&1); $(grep -E "bind|wide" "$WORK/ext.log" | tail -n 6)"
fi
echo "# binds tarema refused: $(binds)"
summary
