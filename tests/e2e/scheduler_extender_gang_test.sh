#!/usr/bin/env bash
# tests/e2e/scheduler_extender_gang_test.sh: in extender mode a gang is one job of the backfill
# plan (issue 32: "each of the first N pending pods or gangs"), as in the live scheduler. The
# real kube-scheduler places the pods, its GangScheduling plugin holding a native PodGroup's
# members until minCount fit; tarema-scheduler (--mode extender, reserveDepth 1) plans from its
# informers. Two 8-core kwok nodes of this test's own:
#   - run-a (4 cores) on A ends after 20 s, run-b (4 cores) on B after 45 s (both pinned);
#   - gang g (PodGroup minCount 2, two members of 6 cores) fits only once both have ended: its
#     shadow starts at run-b's end, on both nodes, leaving 2 cores spare on each. Its PodGroup
#     and both members get tarema.io/expected-start;
#   - l1, l2, l3 (2 cores, 300 s) would fit now (4 free cores per node). Two fit the spare; the
#     third would still run when the gang starts: it stays Pending, its FailedScheduling naming
#     the gang's shadow. With each member planned alone (before), the depth-1 shadow covered one
#     member on A, B was free for all, and l2 and l3 took it: the gang's second member then found
#     4 free cores on B until they ended, 300 s later;
#   - the gang binds whole at its expected start.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): needs kube-scheduler stopped, runs and restarts it with an extender config
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/backfill_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

if ! why=$(gang_require_api native); then
  echo "skipped: $why"
  summary
  exit 0
fi
bf_extender_begin extgang xg 2
extender_setup "$PROFILE"
mapfile -t NODES < <(kubectl get nodes -l "tarema.io/e2e-set=$SET" -o json | jq -r '.items[].metadata.name' | sort)
if [ "${#NODES[@]}" != 2 ]; then
  fail "two test nodes" "${NODES[*]}"
  summary
  exit 1
fi
A=${NODES[0]} B=${NODES[1]}

# pinned: PIN NAME NODE CPU SECS
pin() { pod "$1" "$3" "$4s" | jq -c --arg n "$2" '.spec.nodeName = $n' | kubectl create -f - >/dev/null; }
pin run-a "$A" 4 20
pin run-b "$B" 4 45
runs() { [ "$(kubectl get pod -n "$NS" "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
check "run-a runs on $A" wait_for 60 runs run-a
check "run-b runs on $B" wait_for 30 runs run-b
T_B=$(epoch "$(kubectl get pod -n "$NS" run-b -o jsonpath='{.status.startTime}')")

# the gang: its PodGroup, then two 6-core members on this test's nodes (tolerations, selector
# and expected runtime as every pod of this test)
GANG_POD_PATCH=".spec.nodeSelector = {\"tarema.io/e2e-set\": \"$SET\"}
  | .spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
  | .metadata.annotations = {\"tarema.io/duration\": \"30s\", \"tarema.io/expected-duration\": \"30s\"}"
export GANG_POD_PATCH
check "gang g (native PodGroup, minCount 2, 2 x 6 cores) created" gang_create native "$NS" g 2 2 "$PROFILE" 6 1Gi
GV=$(gang_native_gv)
pg_start() { kubectl get "podgroups.${GV%%/*}" -n "$NS" g -o jsonpath='{.metadata.annotations.tarema\.io/expected-start}' 2>/dev/null; }
has_pg_start() { [ -n "$(pg_start)" ]; }
if wait_for 30 has_expected_start g-1 && wait_for 10 has_expected_start g-2; then
  es=$(epoch "$(expected_start g-1)")
  # run-b's end (its start T_B + 45 s): from 5 s before to 15 s after (the resolution rounds up)
  if [ "$es" -ge $((T_B + 45 - 5)) ] && [ "$es" -le $((T_B + 45 + 15)) ] && [ "$(expected_start g-2)" = "$(expected_start g-1)" ]; then
    pass "both members expect the gang's start, run-b's end ($(expected_start g-1))"
  else
    fail "both members expect the gang's start, run-b's end" "g-1 $(expected_start g-1), g-2 $(expected_start g-2), run-b started at $(date -u -d "@$T_B" +%T)"
  fi
else
  fail "the gang's members get tarema.io/expected-start" "g-1 '$(expected_start g-1)', g-2 '$(expected_start g-2)'; $(grep "backfill:" "$WORK/ext.log" | tail -n 3)"
  es=$((T_B + 45))
fi
PG_SHOWN=0
if wait_for 20 has_pg_start && [ "$(pg_start)" = "$(expected_start g-1)" ]; then
  PG_SHOWN=1
  pass "the PodGroup carries the same expected start ($(pg_start))"
else
  fail "the PodGroup carries the gang's expected start" "'$(pg_start)'"
fi

# one after another, each once a plan has counted the one before on its node (kube-scheduler
# binds them itself: without extender.bind a plan counts a bound pod at most a resolution later,
# docs/backfill.md, "In extender mode")
plans() { grep -c "backfill: planned" "$WORK/ext.log"; }
planned_since() { [ "$(plans)" -gt "$1" ]; }
bound_count() { local n=0 l; for l in "$@"; do is_bound "$l" && n=$((n + 1)); done; echo "$n"; }
for l in l1 l2; do
  pod "$l" 2 300s | kubectl create -f - >/dev/null
  if wait_for 30 is_bound "$l"; then
    before=$(plans)
    wait_for 20 planned_since "$before"
  fi
done
pod l3 2 300s | kubectl create -f - >/dev/null
if [ "$(bound_count l1 l2)" = 2 ] && [ "$(bound_at l1)" != "$(bound_at l2)" ]; then
  pass "l1 and l2 fit the gang's spare, one on each node"
else
  fail "l1 and l2 fit the gang's spare, one on each node" "l1 on '$(bound_at l1)', l2 on '$(bound_at l2)'"
fi
held_l3() { failed_event l3 "held for gang k8s-podgroup/$NS/g from"; }
if wait_for 30 held_l3 && ! is_bound l3; then
  pass "l3 stays Pending, held for the gang: $(notes l3 | grep -m1 held | head -c 300)"
else
  fail "l3 stays Pending, held for the gang" "l3 on '$(bound_at l3)'; $(notes l3)"
fi

both() { is_bound g-1 && is_bound g-2; }
if wait_for 90 both; then
  T_G=$(date +%s)
  late=$((T_G - es))
  if [ "$late" -le 15 ] && [ "$late" -ge -15 ]; then
    pass "the gang binds whole within 15 s of its expected start ($late s)"
  else
    fail "the gang binds whole within 15 s of its expected start" "$late s from it"
  fi
  # (node A had room from run-a's end on, 25 s before the gang's start)
  if ! is_bound l3; then
    pass "l3 still Pending when the gang binds"
  else
    fail "l3 still Pending when the gang binds" "l3 on $(bound_at l3)"
  fi
  if [ "$(bound_at g-1)" != "$(bound_at g-2)" ]; then
    pass "one member on each node ($(bound_at g-1), $(bound_at g-2))"
  else
    fail "one member on each node" "both on $(bound_at g-1)"
  fi
else
  fail "the gang binds whole" "g-1 on '$(bound_at g-1)', g-2 on '$(bound_at g-2)'; $(kubectl get pods -n "$NS" -o wide 2>&1 | tail -n 8)"
fi
# (only once it was shown, and on the PodGroup as it still exists)
pg_exists() { kubectl get "podgroups.${GV%%/*}" -n "$NS" g -o name >/dev/null 2>&1; }
gone_pg() { pg_exists && [ -z "$(pg_start)" ]; }
if [ "$PG_SHOWN" = 1 ] && wait_for 20 gone_pg; then
  pass "the PodGroup's expected start is removed once the gang is bound"
else
  fail "the PodGroup's expected start is removed once the gang is bound" "shown $PG_SHOWN, now '$(pg_start)'"
fi
summary
