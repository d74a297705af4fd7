#!/usr/bin/env bash
# tests/e2e/scheduler_extender_backfill_test.sh: backfill in extender mode (issue 32: "one pure
# plugin for the live scheduler, the extender and the simulator"). The real kube-scheduler places
# the pods; tarema-scheduler (--mode extender, backfill reserveDepth 1 by default) plans the
# shadows of the pods of kube-scheduler's extender profile from its informer, and its /filter
# keeps kube-scheduler's pods off a node where they would delay the head's shadow. One 8-core
# kwok node of this test's own:
#   - run-a (4 cores, 30 s) runs; wide (8 cores) waits for the whole node: its shadow starts at
#     run-a's expected end, and it gets tarema.io/expected-start;
#   - long (2 cores, 120 s) would fit now on the 4 free cores but still run at that time: it
#     stays Pending, its FailedScheduling event naming the shadow ("held for pod NS/wide");
#   - short (2 cores, 4 s) ends before the shadow starts: kube-scheduler binds it (backfilled);
#   - when run-a ends, wide fits now but is not bound yet, and kube-scheduler may try long first
#     (its queue's order, not tarema's): tarema's /filter, asked while kube-scheduler is paused,
#     passes wide and still refuses long, the node held for wide from now;
#   - wide binds once run-a has ended, before long (without tarema, kube-scheduler binds long at
#     once and wide waits the 120 s, as the reference at the end shows).
# A second extender replica of the same profile plans too but stands by on the Lease: it writes
# no expected-start while the first holds it, and takes over the writes when the first stops.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): needs kube-scheduler stopped, runs and restarts it with an extender config
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/backfill_lib.sh"

bf_extender_begin extbf xb
# kube-scheduler is paused below for up to run-a's 30 s: a /filter call in flight then must not
# time out on resumption (kube-scheduler would place the pod without its ignorable extender; seen
# in CI: long bound on the node held for wide)
EXTENDER_HTTP_TIMEOUT=120s extender_setup "$PROFILE"
EXT_PID=$SCHED_PID
leads() { grep -q "leading: writing expected starts" "$1"; }
wait_for 20 leads "$WORK/ext.log"
# the standby: same profile, so the same Lease (the scheduler name); SCHED_PORT stays the first's
EXT_PORT=$SCHED_PORT
TLS=$REPO_ROOT/tests/fixtures/tls
if start_scheduler "$WORK/ext2.log" --mode extender --scheduler-name "$PROFILE" --log-level debug \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" --client-ca-file "$TLS/ca.crt"; then
  pass "a second extender replica starts"
else
  fail "a second extender replica starts" "$(tail -n 5 "$WORK/ext2.log")"
fi
SCHED_PORT=$EXT_PORT
if leads "$WORK/ext.log" && ! leads "$WORK/ext2.log"; then
  pass "the first replica holds the Lease, the second stands by"
else
  fail "the first replica holds the Lease, the second stands by" "$(grep -h "lead" "$WORK/ext.log" "$WORK/ext2.log" | tail -n 4)"
fi

bf_run_then_wide 4 30 8 60 5
pod long 2 120s | kubectl create -f - >/dev/null
pod short 2 4s | kubectl create -f - >/dev/null
check "short (ends before the shadow) is backfilled" wait_for 30 is_bound short
held() { failed_event long "held for pod $NS/wide"; }
if wait_for 30 held && ! is_bound long; then
  pass "long (would run into the shadow) stays Pending: held for pod $NS/wide"
else
  fail "long stays Pending, held for wide" "node '$(bound_at long)'; events: $(notes long)"
fi
# The window: run-a has ended, wide fits now, kube-scheduler has not bound it yet and may try
# long first (seen in CI under load: long bound on the node, wide 2 min late). kube-scheduler is
# paused (SIGSTOP) across run-a's end and tarema's /filter asked for both pods as kube-scheduler
# asks: wide passes once tarema has seen run-a end, and long must still be refused then.
NODE=$(kubectl get nodes -l "tarema.io/e2e-set=$SET" -o jsonpath='{.items[0].metadata.name}')
MTLS=(--cacert "$TLS/ca.crt" --cert "$TLS/client.crt" --key "$TLS/client.key")
filter_for() {
  jq -cn --argjson pod "$(kubectl get pod -n "$NS" "$1" -o json)" --arg node "$NODE" '{Pod: $pod, NodeNames: [$node]}' |
    curl -sf --max-time 10 "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d @- "https://127.0.0.1:$EXT_PORT/filter"
}
passes() { filter_for "$1" | jq -e --arg n "$NODE" '(.NodeNames // []) | index($n) != null' >/dev/null; }
ended() { [ "$(kubectl get pod -n "$NS" run-a -o jsonpath='{.status.phase}')" = Succeeded ]; }
# (wide passes as soon as tarema's view has run-a gone, within 50 ms; the plan follows within a
# resolution, 1 s: until then the last plan's shadow, starting at run-a's expected end, refuses
# long whether or not wide is held from now, so the answer that counts comes after a new plan)
plans() { grep -c "backfill: planned" "$WORK/ext.log"; }
planned_since() { [ "$(plans)" -gt "$1" ]; }
KS_PID=$(cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid" 2>/dev/null)
if [ -z "$KS_PID" ]; then
  fail "kube-scheduler paused before run-a ends" "no pid in $TAREMA_CLUSTER_DIR/run/scheduler.pid"
elif ! kill -STOP "$KS_PID"; then
  fail "kube-scheduler paused before run-a ends" "kill -STOP $KS_PID failed"
  KS_PID=
elif ended; then
  kill -CONT "$KS_PID"
  KS_PID=
  fail "kube-scheduler paused before run-a ends" "run-a had ended already ($(($(date +%s) - T_A)) s after its bind): the machine is too slow for this test"
else
  if wait_for 60 passes wide; then
    before=$(plans)
    wait_for 20 planned_since "$before"
    ans=$(filter_for long)
    if jq -e --arg n "$NODE" '(.NodeNames // []) | index($n) == null' <<<"$ans" >/dev/null &&
      jq -r --arg n "$NODE" '.FailedNodes[$n] // ""' <<<"$ans" | qgrep "held for pod $NS/wide"; then
      pass "run-a ended, wide passes /filter and long is refused: $(jq -r --arg n "$NODE" '.FailedNodes[$n]' <<<"$ans")"
    else
      fail "run-a ended, wide passes /filter and long is refused" "$ans"
    fi
  else
    fail "wide passes /filter once run-a has ended" "$(filter_for wide); run-a $(kubectl get pod -n "$NS" run-a -o jsonpath='{.status.phase}')"
  fi
  kill -CONT "$KS_PID"
  KS_PID=
fi
T_CONT=$(date +%s)
if wait_for 60 is_bound wide; then
  pass "wide binds once run-a has ended"
else
  fail "wide binds once run-a has ended" "$(grep -E "wide|passes node=" "$WORK/ext.log" | tail -n 8)"
fi
# kube-scheduler retries a pod after any event; one refused on tarema's view while it was behind
# kube-scheduler's (run-a still running) would wait for the next, unless tarema asks (extender.h,
# "Retries")
echo "# tarema asked kube-scheduler to retry $(grep -c 'passes node=' "$WORK/ext.log") pod(s) refused on an older view"
T_W=$(date +%s)
start_of() { kubectl get pod -n "$NS" "$1" -o jsonpath='{.status.startTime}'; }
# (wide bound, and long either not bound or started after it: an unbound wide never passes)
if is_bound wide && { ! is_bound long || [ "$(start_of long)" \> "$(start_of wide)" ]; }; then
  pass "wide started before long ($((T_W - T_A)) s after run-a)"
else
  fail "wide started before long" "$(kubectl get pods -n "$NS" -o wide 2>&1)"
fi
# (from kube-scheduler's resumption when the test held it paused past the expected start)
from=$es
[ "$T_CONT" -gt "$from" ] && from=$T_CONT
late=$((T_W - from))
if [ "$late" -le 10 ]; then pass "wide bound within 10 s of its expected start ($late s; kube-scheduler resumed $((T_CONT - es)) s after it)"; else fail "wide bound within 10 s of its expected start" "$late s late (kube-scheduler resumed $((T_CONT - es)) s after it)"; fi

# The standby planned the same shadows but wrote none. Stopped, the first hands the Lease over
# and the second writes: long deleted, a new wide2 (8 cores) is the head, its shadow at wide's
# expected end (wide runs 60 s; kube-scheduler, whose extender is gone, binds nothing meanwhile).
writes() { grep -c "backfill: expected start pod=" "$1"; }
planned2=$(grep -c "backfill: planned jobs=[1-9]" "$WORK/ext2.log")
if [ "$(writes "$WORK/ext.log")" -ge 1 ] && [ "$(writes "$WORK/ext2.log")" = 0 ] && [ "$planned2" -ge 1 ]; then
  pass "only the Lease holder wrote expected starts ($(writes "$WORK/ext.log") writes; the standby planned $planned2 times, wrote 0)"
else
  fail "only the Lease holder wrote expected starts" "holder $(writes "$WORK/ext.log"), standby $(writes "$WORK/ext2.log") writes, standby plans $planned2"
fi
kill "$EXT_PID" 2>/dev/null
wait "$EXT_PID" 2>/dev/null
if wait_for 20 leads "$WORK/ext2.log"; then
  pass "the standby takes the Lease when the first replica stops"
else
  fail "the standby takes the Lease when the first replica stops" "$(grep "lead" "$WORK/ext2.log" | tail -n 3)"
fi
kubectl delete pod -n "$NS" long --grace-period=0 --force >/dev/null 2>&1
pod wide2 8 30s | kubectl create -f - >/dev/null
if wait_for 20 has_expected_start wide2 && grep -q "backfill: expected start pod=$NS/wide2" "$WORK/ext2.log"; then
  pass "the new holder writes wide2's expected start ($(expected_start wide2))"
else
  fail "the new holder writes wide2's expected start" "'$(expected_start wide2)'; wide $(kubectl get pod -n "$NS" wide -o jsonpath='{.status.phase}' 2>&1); $(grep "backfill:" "$WORK/ext2.log" | tail -n 3)"
fi

# The reference: the same pods without tarema (kube-scheduler alone) bind long at once, so wide
# waits for it.
bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
STARTED_KS=0
kubectl delete pods -n "$NS" --all --grace-period=0 --force --wait=true >/dev/null 2>&1
no_pods() { [ "$(count_of 'true')" = 0 ]; }
wait_for 60 no_pods
REF=default-scheduler
if bash "$REPO_ROOT/hack/cluster.sh" scheduler start >"$WORK/ks-ref.out" 2>&1 || wait_for 10 kube_scheduler_healthy; then
  STARTED_KS=1
  bf_pod "$REF" run-a 4 20s | kubectl create -f - >/dev/null
  wait_for 60 is_bound run-a
  bf_pod "$REF" wide 8 30s | kubectl create -f - >/dev/null
  bf_pod "$REF" long 2 120s | kubectl create -f - >/dev/null
  if wait_for 30 is_bound long && ! is_bound wide; then
    pass "reference: kube-scheduler alone binds long at once, wide waits behind it"
  else
    fail "reference: kube-scheduler alone binds long at once" "$(kubectl get pods -n "$NS" -o wide 2>&1)"
  fi
else
  fail "reference: kube-scheduler starts" "$(tail -n 5 "$WORK/ks-ref.out")"
fi
summary
