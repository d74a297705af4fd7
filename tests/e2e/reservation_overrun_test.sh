#!/usr/bin/env bash
# tests/e2e/reservation_overrun_test.sh: a pod let into a Reservation's held capacity on a short
# expected end, still running when the window opens, is evicted (spec.evictOverrunning, default
# true; issue 31), and the owner's pod starts in its place; with evictOverrunning false the same
# pod keeps running and the owner's pod waits. Two node sets of 2 nodes of 2 cores, one
# reservation each, held RESV_OVERRUN_LEAD_S (20) s ahead for 2 pods of 2 cores (every core):
#  1. both admitted; pods with tarema.io/expected-duration 5s (kwok never ends them: they overrun)
#     backfill onto every held node before the window; the owners' pods wait;
#  2. the window opens: on the evicting set both overrunning pods are evicted (gone, a Preempted
#     event related to the Reservation, an EvictingOverrun event on it, the metric), and both
#     owner pods bind on the held nodes;
#  3. on the set with evictOverrunning false, in the same controller pass: both overrunning pods
#     still run and the owners' pods wait;
#  4. no node over its capacity, no errors logged.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

LEAD=${RESV_OVERRUN_LEAD_S:-20}
sched_e2e_begin rovr ro
SET_E=e$ID
SET_K=k$ID
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}e, count: 2, cpu: 2, memory: 8Gi, pods: 20,
     labels: {tarema.io/e2e-set: "$SET_E"}}
  - {prefix: ${P}k, count: 2, cpu: 2, memory: 8Gi, pods: 20,
     labels: {tarema.io/e2e-set: "$SET_K"}}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start

# ---- 1. admitted, backfilled ------------------------------------------------------------------
owner() { echo "{\"selector\":{\"matchLabels\":{\"owner\":\"$1-$ID\"}}}"; }
{
  reservation_json "$NS" evict "$LEAD" 600 2 2 "$SET_E" "$(owner evict)"
  reservation_json "$NS" keep "$LEAD" 600 2 2 "$SET_K" "$(owner keep)" | jq -c '.spec.evictOverrunning = false'
} | kubectl create -f - >/dev/null
T_START=$(($(date +%s) + LEAD))
both_admitted() { phase_is "$NS" evict Admitted && phase_is "$NS" keep Admitted; }
if wait_for 15 both_admitted; then pass "both reservations admitted"; else fail "both reservations admitted" "evict '$(resv_phase "$NS" evict)': $(resv_message "$NS" evict); keep '$(resv_phase "$NS" keep)': $(resv_message "$NS" keep)"; fi
if [ "$(kubectl get reservation -n "$NS" keep -o jsonpath='{.spec.evictOverrunning}')" = false ] &&
  [ "$(kubectl get reservation -n "$NS" evict -o jsonpath='{.spec.evictOverrunning}')" = true ]; then
  pass "spec.evictOverrunning kept by the API server (defaulted true by the CRD)"
else
  fail "spec.evictOverrunning kept by the API server (defaulted true by the CRD)" "$(kubectl get reservation -n "$NS" -o jsonpath='{.items[*].spec}')"
fi
{
  for s in e k; do
    set=$SET_E
    [ $s = k ] && set=$SET_K
    for i in 1 2; do
      set_pod_json "$NS" "over-$s$i" "$SCHED" "$set" 2 '{}' '{"tarema.io/expected-duration":"5s"}'
    done
  done
} | kubectl create -f - >/dev/null
all_over_bound() { local p; for p in over-e1 over-e2 over-k1 over-k2; do is_bound "$NS" "$p" || return 1; done; }
if wait_for 15 all_over_bound; then
  pass "pods expected to end in 5 s backfill onto every held node before the window"
else
  fail "pods expected to end in 5 s backfill onto every held node before the window" "$(kubectl get pods -n "$NS" -o wide)"
fi
{
  for s in evict keep; do
    set=$SET_E
    [ $s = keep ] && set=$SET_K
    for i in 1 2; do
      set_pod_json "$NS" "$s-owner-$i" "$SCHED" "$set" 2 "{\"owner\":\"$s-$ID\"}" '{}'
    done
  done
} | kubectl create -f - >/dev/null
now=$(date +%s)
if [ "$now" -lt "$T_START" ] && phase_is "$NS" evict Admitted; then
  pass "set up $((T_START - now)) s before the window opens"
else
  fail "set up before the window opens" "now $now, start $T_START: raise RESV_OVERRUN_LEAD_S"
fi

# ---- 2. the window opens: evicted, the owner starts ---------------------------------------------
gone() { ! kubectl get pod -n "$NS" "$1" >/dev/null 2>&1; }
owners_in() { is_bound "$NS" evict-owner-1 && is_bound "$NS" evict-owner-2; }
if wait_for $((T_START - $(date +%s) + 30)) owners_in; then
  took=$(($(date +%s) - T_START))
  pass "the owner's 2 pods bind once the window opens (${took} s after its start)"
else
  fail "the owner's 2 pods bind once the window opens" "$(kubectl get pods -n "$NS" -o wide 2>&1; grep -i "reservation\|overrun" "$WORK/sched.log" | tail -5)"
fi
if gone over-e1 && gone over-e2; then pass "both overrunning pods evicted"; else fail "both overrunning pods evicted" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi
held=$(resv_nodes "$NS" evict)
on_held=0
for i in 1 2; do echo "$held" | qgrep -x "$(pod_node "$NS" "evict-owner-$i")" && on_held=$((on_held + 1)); done
if [ "$on_held" = 2 ]; then pass "the owner's pods run on the held nodes"; else fail "the owner's pods run on the held nodes" "$on_held of 2; held: $held"; fi
preempted_by_resv() {
  kubectl get events.events.k8s.io -n "$NS" -o json |
    jq --arg p "$1" '[.items[] | select(.regarding.name == $p and .reason == "Preempted" and .related.kind == "Reservation" and .related.name == "evict" and (.note | test("ran past the expected end")))] | length'
}
ev_ok() { [ "$(preempted_by_resv over-e1)" = 1 ] && [ "$(preempted_by_resv over-e2)" = 1 ]; }
if wait_for 10 ev_ok; then pass "a Preempted event on each evicted pod, related to the Reservation"; else fail "a Preempted event on each evicted pod, related to the Reservation" "$(kubectl get events.events.k8s.io -n "$NS" -o json | jq -c '[.items[] | select(.reason == "Preempted") | {r: .regarding.name, rel: .related, note}]')"; fi
if [ "$(reservation_events "$NS" evict EvictingOverrun)" = 2 ]; then pass "two EvictingOverrun events on the Reservation"; else fail "two EvictingOverrun events on the Reservation" "$(reservation_events "$NS" evict EvictingOverrun)"; fi
v=$(metric_sum "$SCHED_PORT" '^tarema_preemption_victims_total[{]reason="reservation_overrun"[}]$')
if [ "$v" = 2 ]; then pass "tarema_preemption_victims_total{reason=reservation_overrun} 2"; else fail "tarema_preemption_victims_total{reason=reservation_overrun} 2" "got '$v'"; fi
if grep -q "reservation victim pod=$NS/over-e1 .*why=\"expected to end by" "$WORK/sched.log"; then pass "the log names the victim and why"; else fail "the log names the victim and why" "$(grep -i "victim" "$WORK/sched.log" | tail -3)"; fi

# ---- 3. evictOverrunning false ------------------------------------------------------------------
# The controller decides both reservations in one pass; the evicting one has acted, so this one
# has been seen with its window open. Its owners were tried since (PodScheduled False).
if is_bound "$NS" over-k1 && is_bound "$NS" over-k2; then pass "evictOverrunning false: the overrunning pods keep running"; else fail "evictOverrunning false: the overrunning pods keep running" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi
if not_bound "$NS" keep-owner-1 && not_bound "$NS" keep-owner-2; then pass "evictOverrunning false: the owner's pods wait"; else fail "evictOverrunning false: the owner's pods wait" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi
if [ "$(reservation_events "$NS" keep EvictingOverrun)" = 0 ]; then pass "evictOverrunning false: no EvictingOverrun event"; else fail "evictOverrunning false: no EvictingOverrun event" "$(reservation_events "$NS" keep EvictingOverrun)"; fi

# ---- 4. the end -----------------------------------------------------------------------------------
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its capacity"; else fail "no node over its capacity" "$out"; fi
if grep -q "ERROR\|level=error" "$WORK/sched.log"; then fail "no errors logged" "$(grep -h "ERROR\|level=error" "$WORK/sched.log" | head -3)"; else pass "no errors logged"; fi
summary
