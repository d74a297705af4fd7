#!/usr/bin/env bash
# tests/e2e/scheduler_backfill_restart_test.sh: the scheduler restarted while it holds a shadow
# (issue 32, "Restart the scheduler with shadows held: rebuilt from the API server, no pod of
# the head overtaken meanwhile"; docs/backfill.md). One 8-core kwok node of the test's own:
#  - 8 running 1-core pods of known end: 4 end after SHORT_S, 4 after LONG_S;
#  - an 8-core pod (the head of the queue) gets a shadow at the last of those ends;
#  - 1-core pods of a long runtime queue behind it: any of them bound on a freed core would
#    delay the head until it ends, so backfill must keep them off;
#  - once the 4 short pods ended (4 cores free, held for the head), the scheduler is killed
#    (SIGKILL: no graceful anything) and started again.
# After the restart: the shadow is rebuilt from the API server (the same start within the
# resolution, no narrow pod bound on the free cores while the new process comes up), and the
# head binds within a cycle or two of the announced start, no narrow pod before it.
# e2e-run: early (tests/run.sh starts it before the short tests: it takes about a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/backfill_lib.sh"

SHORT_S=${BACKFILL_RESTART_SHORT_S:-10}
LONG_S=${BACKFILL_RESTART_LONG_S:-30}
# How far past its announced start the head may bind: kwok's lag in ending a pod, the watch,
# one backoff (1 s), the resolution (as scheduler_backfill_test's BACKFILL_LATE_S).
LATE_S=${BACKFILL_LATE_S:-6}

sched_e2e_begin bfr bfr
SET=bfr$ID
# BACKFILL_LOG_DIR: keep the schedulers' logs (debug level) for a look after the run
LOGLEVEL=()
[ -n "${BACKFILL_LOG_DIR:-}" ] && LOGLEVEL=(--log-level debug)
extra_cleanup() {
  [ -n "${BACKFILL_LOG_DIR:-}" ] && mkdir -p "$BACKFILL_LOG_DIR" && cp "$WORK"/*.log "$BACKFILL_LOG_DIR"/
  true
}
sched_e2e_namespace
bf_nodes 1
# pod NAME CPU DURATION: a pod of this test's scheduler (bf_pod).
pod() { bf_pod "$SCHED" "$@"; }
running_fill() { [ "$(count_of '(.metadata.name | startswith("fill-")) and .status.phase == "Running"')" = "$1" ]; }
narrow_bound() { count_of '(.metadata.name | startswith("narrow-")) and .spec.nodeName != null'; }
is_bound() { [ -n "$(pod_node "$1" "$2")" ]; }
# narrow_held: a narrow pod's PodScheduled condition says the node is held for the head.
narrow_held() {
  local j
  j=$(ns_pods) || return 1
  jq -e --arg w "pod $NS/wide" '[.items[] | select(.metadata.name | startswith("narrow-")) | .status.conditions[]? |
    select(.type == "PodScheduled" and .status == "False") | .message | select(contains("held for " + $w + " from "))] | length > 0' <<<"$j" >/dev/null
}

cat >"$WORK/sched.yaml" <<EOF
schedulerName: $SCHED
podInitialBackoffMs: 500
podMaxBackoffMs: 1000
backfill: {reserveDepth: 1, resolution: 1s}
EOF
if start_scheduler "$WORK/sched1.log" --config "$WORK/sched.yaml" "${LOGLEVEL[@]}"; then pass "scheduler starts"; else
  fail "scheduler starts" "$(tail -n 5 "$WORK/sched1.log")"; summary; exit 1
fi
PORT1=$SCHED_PORT PID1=$SCHED_PID

for k in 0 1 2 3; do pod "fill-$k" 1 "${SHORT_S}s"; done | kubectl create -f - >/dev/null
for k in 4 5 6 7; do pod "fill-$k" 1 "${LONG_S}s"; done | kubectl create -f - >/dev/null
check "8 running pods fill the node" wait_for 30 running_fill 8

pod wide 8 5s | kubectl create -f - >/dev/null
T0=$(date +%s)
if wait_for 10 has_expected_start wide; then
  ANN=$(expected_start wide)
  pass "the 8-core pod's expected start is announced ($ANN, after $(($(date +%s) - T0)) s)"
else
  fail "the 8-core pod's expected start is announced" "none after 10 s"; summary; exit 1
fi
# The running pods' last expected end (startTime has whole seconds): the node is whole then.
E=$(ns_pods | jq '[.items[] | select(.metadata.name | startswith("fill-")) | (.status.startTime | fromdate) + (.metadata.annotations["tarema.io/expected-duration"] | rtrimstr("s") | tonumber)] | max')
A=$(epoch "$ANN")
if [ "$A" -ge "$((E - 1))" ] && [ "$A" -le "$((E + 2))" ]; then pass "it is the running pods' last end ($(date -u -d "@$E" +%H:%M:%SZ))"; else
  fail "it is the running pods' last end" "$ANN against $(date -u -d "@$E" +%H:%M:%SZ)"
fi

# The narrow pods join the queue after the head: its creation second must have passed (the
# queue orders by creationTimestamp, whole seconds, then by name).
CW=$(epoch "$(kubectl get pod -n "$NS" wide -o jsonpath='{.metadata.creationTimestamp}')")
after_wide() { [ "$(date +%s)" -gt "$CW" ]; }
wait_for 5 after_wide
for k in 0 1 2 3 4 5; do pod "narrow-$k" 1 120s; done | kubectl create -f - >/dev/null

# The short pods end: 4 cores free, held for the head; the narrow pods are refused them.
check "the 4 short pods ended (4 cores free)" wait_for $((SHORT_S + 20)) running_fill 4
if wait_for 10 narrow_held; then pass "before the restart: the narrow pods are refused the free cores held for the head"; else
  fail "before the restart: the narrow pods are refused the free cores held for the head" "$(ns_pods | jq -c '[.items[] | select(.metadata.name | startswith("narrow-")) | {n: .metadata.name, node: .spec.nodeName, c: [.status.conditions[]?.message]}]')"
fi
NB=$(narrow_bound)
if [ "$NB" = 0 ]; then pass "before the restart: no narrow pod bound"; else fail "before the restart: no narrow pod bound" "$NB bound"; fi
W1=$(metric "$PORT1" tarema_backfill_expected_start_writes_total)

# ---- the restart ------------------------------------------------------------------------------
kill -KILL "$PID1"
wait "$PID1" 2>/dev/null
SCHED_PIDS=()
TK=$(date +%s)
if start_scheduler "$WORK/sched2.log" --config "$WORK/sched.yaml" "${LOGLEVEL[@]}"; then pass "scheduler starts again after SIGKILL"; else
  fail "scheduler starts again after SIGKILL" "$(tail -n 5 "$WORK/sched2.log")"; summary; exit 1
fi
PORT2=$SCHED_PORT
# The new process leads once the killed one's lease expired (15 s), then schedules.
shadow_held() { [ "$(metric "$PORT2" tarema_backfill_shadows)" = 1 ]; }
if wait_for 40 shadow_held; then pass "after the restart: the shadow is rebuilt ($(($(date +%s) - TK)) s after the kill)"; else
  fail "after the restart: the shadow is rebuilt" "tarema_backfill_shadows $(metric "$PORT2" tarema_backfill_shadows)"
fi
ANN2=$(expected_start wide)
W2=$(metric "$PORT2" tarema_backfill_expected_start_writes_total)
echo "    announced $ANN before the restart (by $W1 writes), $ANN2 after it; the new process wrote $W2"
# The new process rewrites the annotation only when its plan moved by the resolution (1 s) or
# more from what it read: no write and the same value is the same start.
if [ "$(epoch "$ANN2")" -ge "$((A - 1))" ] && [ "$(epoch "$ANN2")" -le "$((A + 1))" ] && [ "${W2:-1}" = 0 ]; then
  pass "after the restart: the same expected start within the resolution (not rewritten)"
else
  fail "after the restart: the same expected start within the resolution" "before $ANN, after $ANN2, $W2 writes by the new process"
fi
# Every pending pod tried by the new process (the head and the 6 narrow ones), the binds of its
# first batch answered: none of them on the free cores.
tried_all() { [ "$(metric_sum "$PORT2" '^tarema_schedule_attempts_total')" -ge 7 ] && [ "$(metric "$PORT2" tarema_binds_in_flight)" = 0 ]; }
wait_for 10 tried_all
NB=$(narrow_bound)
if [ "$NB" = 0 ]; then pass "after the restart: no narrow pod took the held cores ($(metric_sum "$PORT2" '^tarema_schedule_attempts_total') attempts)"; else
  fail "after the restart: no narrow pod took the held cores" "$NB bound: $(ns_pods | jq -c '[.items[] | select((.metadata.name | startswith("narrow-")) and .spec.nodeName != null) | .metadata.name]')"
fi

# ---- the head starts --------------------------------------------------------------------------
if wait_for $((LONG_S + 30)) is_bound "$NS" wide; then
  TB=$(date +%s)
  NB=$(narrow_bound)
  LAST=$(expected_start wide)
  echo "    8-core pod announced for $ANN (last $LAST), bound at $(date -u -d "@$TB" +%H:%M:%SZ): $((TB - A)) s after the announced start; $NB narrow pods bound by then"
  if [ "$((TB - A))" -le "$LATE_S" ]; then pass "the head binds within ${LATE_S} s of its announced start"; else
    fail "the head binds within ${LATE_S} s of its announced start" "$((TB - A)) s after"
  fi
  if [ "$NB" = 0 ]; then pass "no narrow pod was bound before the head"; else fail "no narrow pod was bound before the head" "$NB"; fi
else
  fail "the head binds" "still pending $((LONG_S + 30)) s on; $(narrow_bound) narrow pods bound"
fi
# And the narrow pods are not starved in turn: they run once the head ended (5 s).
narrow_all_bound() { [ "$(narrow_bound)" -ge 6 ]; }
if wait_for 30 narrow_all_bound; then pass "the narrow pods bind after the head"; else fail "the narrow pods bind after the head" "$(narrow_bound) of 6"; fi
summary
