#!/usr/bin/env bash
# tests/e2e/scheduler_backfill_held_test.sh: a pod released early and held by the order gate
# (ASA's pro-active submission: docs/asa.md; docs/backfill.md, "Pods released early") gets a
# shadow from its tarema.io/not-before, on the test's own 8-core kwok node, depth 1:
#  - 4 running 1-core pods of known end (FILL_S): 4 cores free now, all 8 at their end (E);
#  - "held": 8 cores, gate tarema.io/after-predecessors only (queued, never tried),
#    tarema.io/not-before = E + GAP_S (its predecessors' expected end, as the planner writes it);
#  - behind it, a 1-core pod of 3 s (ends before that time: backfilled on the free cores) and four
#    1-core pods of 120 s (would still run then: kept off the cores held for it);
#  - at its not-before the gate is removed, as the planner does when the predecessors end: it
#    binds within a cycle or two, and the long pods bind after it.
# Before this change a held pod was left out of the plan: the long pods took the 4 free cores and
# the released pod waited for them (120 s).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/backfill_lib.sh"

FILL_S=${BACKFILL_HELD_FILL_S:-10}
GAP_S=${BACKFILL_HELD_GAP_S:-8}
LATE_S=${BACKFILL_LATE_S:-6}

sched_e2e_begin bfh bfh
SET=bfh$ID
# BACKFILL_LOG_DIR: keep the scheduler's log (debug level) for a look after the run
extra_cleanup() { [ -n "${BACKFILL_LOG_DIR:-}" ] && mkdir -p "$BACKFILL_LOG_DIR" && cp "$WORK"/*.log "$BACKFILL_LOG_DIR"/; true; }
sched_e2e_namespace
bf_nodes 1
pod() { bf_pod "$SCHED" "$@"; }
running_fill() { [ "$(count_of '(.metadata.name | startswith("fill-")) and .status.phase == "Running"')" = "$1" ]; }
long_bound() { count_of '(.metadata.name | startswith("long-")) and .spec.nodeName != null'; }
is_bound() { [ -n "$(pod_node "$1" "$2")" ]; }

cat >"$WORK/sched.yaml" <<EOF2
schedulerName: $SCHED
podInitialBackoffMs: 500
podMaxBackoffMs: 1000
backfill: {reserveDepth: 1, resolution: 1s}
EOF2
if start_scheduler "$WORK/sched.log" --config "$WORK/sched.yaml" --log-level debug; then pass "scheduler starts"; else
  fail "scheduler starts" "$(tail -n 5 "$WORK/sched.log")"; summary; exit 1
fi

for k in 0 1 2 3; do pod "fill-$k" 1 "${FILL_S}s"; done | kubectl create -f - >/dev/null
check "4 running pods fill half the node" wait_for 30 running_fill 4
E=$(ns_pods | jq '[.items[] | select(.metadata.name | startswith("fill-")) | (.status.startTime | fromdate) + (.metadata.annotations["tarema.io/expected-duration"] | rtrimstr("s") | tonumber)] | max')
NB=$((E + GAP_S))
NBT=$(date -u -d "@$NB" +%Y-%m-%dT%H:%M:%SZ)
pod held 8 5s | jq -c --arg nb "$NBT" '.metadata.annotations["tarema.io/not-before"] = $nb
  | .spec.schedulingGates = [{name: "tarema.io/after-predecessors"}]' | kubectl create -f - >/dev/null
# the scheduler has queued it (held: counted as gated) and planned it before the pods behind it
# come; those are created in a later second than it was queued (creationTimestamp has whole
# seconds: one of the same second could sort before it)
HC=$(kubectl get pod -n "$NS" held -o json | jq '.metadata.creationTimestamp | fromdate')
held_queued() { [ "$(metric "$SCHED_PORT" 'tarema_pending_pods{queue="gated"}')" = 1 ]; }
check "held pod queued behind its order gate" wait_for 20 held_queued
ANN=""
if wait_for 10 has_expected_start held; then
  ANN=$(expected_start held)
fi
if [ -n "$ANN" ] && [ "$(epoch "$ANN")" -ge "$NB" ] && [ "$(epoch "$ANN")" -le "$((NB + 2))" ]; then pass "the held pod is planned from its not-before: expected start $ANN"; else
  fail "the held pod is planned from its not-before" "expected start '$ANN' against $NBT"
fi
later_second() { [ "$(date +%s)" -ge $((HC + 2)) ]; }
wait_for 5 later_second
A0=$(metric_sum "$SCHED_PORT" '^tarema_schedule_attempts_total')
{
  pod short 1 3s
  for k in 0 1 2 3; do pod "long-$k" 1 120s; done
} | kubectl create -f - >/dev/null
tried_all() { [ "$(metric_sum "$SCHED_PORT" '^tarema_schedule_attempts_total')" -ge $((A0 + 5)) ] && [ "$(metric "$SCHED_PORT" tarema_binds_in_flight)" = 0 ]; }
if wait_for 20 tried_all; then pass "the short and the 4 long pods were tried"; else
  fail "the short and the 4 long pods were tried" "attempts $(metric_sum "$SCHED_PORT" '^tarema_schedule_attempts_total') (from $A0)"
fi
if is_bound "$NS" short; then pass "the 3 s pod is backfilled (it ends before the held pod's not-before)"; else fail "the 3 s pod is backfilled" "pending; $(kubectl get pod -n "$NS" short -o jsonpath='{.status.conditions[0].message}')"; fi
LB=$(long_bound)
if [ "$LB" = 0 ]; then pass "no 120 s pod took the cores held for the released pod"; else fail "no 120 s pod took the cores held for the released pod" "$LB bound"; fi
ANN=$(expected_start held)
if [ -n "$ANN" ] && [ "$(epoch "$ANN")" -ge "$NB" ] && [ "$(epoch "$ANN")" -le "$((NB + 2))" ]; then pass "its expected start is still its not-before ($ANN)"; else
  fail "its expected start is still its not-before" "'$ANN' against $NBT"
fi

# ---- at its not-before the gate goes, as the planner removes it when the predecessors end ----
now_ge_nb() { [ "$(date +%s)" -ge "$NB" ]; }
wait_for $((GAP_S + FILL_S + 30)) now_ge_nb
kubectl patch pod -n "$NS" held --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' >/dev/null
if wait_for $((LATE_S + 20)) is_bound "$NS" held; then
  TB=$(date +%s)
  LB=$(long_bound)
  echo "    held pod: not-before $NBT, gate removed then, bound at $(date -u -d "@$TB" +%H:%M:%SZ): $((TB - NB)) s after; $LB long pods bound by then"
  if [ "$((TB - NB))" -le "$LATE_S" ]; then pass "the released pod binds within ${LATE_S} s of its not-before"; else
    fail "the released pod binds within ${LATE_S} s of its not-before" "$((TB - NB)) s after"
  fi
  if [ "$LB" = 0 ]; then pass "no long pod was bound before it"; else fail "no long pod was bound before it" "$LB"; fi
  long_all_bound() { [ "$(long_bound)" -ge 4 ]; }
  if wait_for 30 long_all_bound; then pass "the long pods bind after it"; else fail "the long pods bind after it" "$(long_bound) of 4"; fi
else
  fail "the released pod binds" "still pending; $(long_bound) long pods bound"
fi
summary
