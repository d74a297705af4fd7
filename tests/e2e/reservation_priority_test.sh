#!/usr/bin/env bash
# tests/e2e/reservation_priority_test.sh: Reservations of higher priority displace admitted ones
# of lower priority (issue 31, docs/reservations.md "Priority and displacement") on the live
# scheduler, with PriorityClasses resolved from the API as for pods:
#  1. lo (priority 10) holds both nodes of set a; mid (100) holds set b. hi (1000) on set a is
#     admitted by displacing lo, and only lo: mid (lower too, but on nodes hi may not use) keeps
#     its holds. lo goes back to Pending, is planned again and fails (one node of a is left),
#     its message naming hi; events on both.
#  2. A reservation whose window is open is never displaced: hi2 (1000) on set c, held by the
#     Active open (10), is refused and open stays Active.
#  3. A priorityClassName that names no PriorityClass: Failed, naming the field.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

sched_e2e_begin resv-prio rp
extra_cleanup() {
  kubectl delete priorityclass "$ID-rlow" "$ID-rmid" "$ID-rhigh" --wait=false >/dev/null 2>&1
  return 0
}
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
check "priority classes rlow 10, rmid 100, rhigh 1000" \
  priority_classes "$ID-rlow" 10 "$ID-rmid" 100 "$ID-rhigh" 1000
cat >"$WORK/nodes.yaml" <<EOF2
nodes:
  - {prefix: ${P}a, count: 2, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "a$ID"}}
  - {prefix: ${P}b, count: 1, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "b$ID"}}
  - {prefix: ${P}c, count: 1, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "c$ID"}}
EOF2
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start

NOBODY="{\"selector\":{\"matchLabels\":{\"nobody\":\"$ID\"}}}"
# prio_resv NAME START_S END_S COUNT SET CLASS: reservation_json with spec.priorityClassName.
prio_resv() {
  reservation_json "$NS" "$1" "$2" "$3" "$4" 2 "$5" "$NOBODY" | jq -c --arg pc "$6" '.spec.priorityClassName = $pc'
}
admitted() { # NAME...
  local r
  for r in "$@"; do
    if wait_for 30 phase_is "$NS" "$r" Admitted Active; then pass "$r admitted"; else fail "$r admitted" "$(resv_phase "$NS" "$r"): $(resv_message "$NS" "$r")"; fi
  done
}

# ---- 1. displacement -----------------------------------------------------------------------------
{
  prio_resv lo 300 900 2 "a$ID" "$ID-rlow"
  prio_resv mid 300 900 1 "b$ID" "$ID-rmid"
  prio_resv open 3 900 1 "c$ID" "$ID-rlow"
} >"$WORK/first.json"
kubectl create -f "$WORK/first.json" >/dev/null
admitted lo mid open
mid_nodes=$(resv_nodes "$NS" mid)
if [ "$(resv_pods "$NS" lo)" = 2 ]; then pass "lo holds both nodes of set a"; else fail "lo holds both nodes of set a" "$(kubectl get reservation -n "$NS" lo -o jsonpath='{.status}')"; fi

prio_resv hi 300 900 1 "a$ID" "$ID-rhigh" | kubectl create -f - >/dev/null
admitted hi
lo_failed() { phase_is "$NS" lo Failed; }
if wait_for 30 lo_failed && [[ $(resv_message "$NS" lo) == *"displaced by $NS/hi (priority 1000 over 10)"* ]] && holds_none "$NS" lo; then
  pass "lo displaced by hi, planned again, not admissible: Failed naming hi, nothing held"
else
  fail "lo displaced by hi, planned again, not admissible: Failed naming hi, nothing held" "$(kubectl get reservation -n "$NS" lo -o jsonpath='{.status}')"
fi
if [[ $(resv_message "$NS" hi) == *"displaced $NS/lo"* ]] && [ "$(resv_pods "$NS" hi)" = 1 ]; then
  pass "hi's status names what it displaced"
else
  fail "hi's status names what it displaced" "$(kubectl get reservation -n "$NS" hi -o jsonpath='{.status}')"
fi
if phase_is "$NS" mid Admitted && [ "$(resv_nodes "$NS" mid)" = "$mid_nodes" ]; then
  pass "mid (lower, on nodes hi may not use) keeps its holds"
else
  fail "mid (lower, on nodes hi may not use) keeps its holds" "$(kubectl get reservation -n "$NS" mid -o jsonpath='{.status}')"
fi
displaced_events() { [ "$(reservation_events "$NS" lo Displaced)" -ge 1 ] && [ "$(reservation_events "$NS" hi Displaced)" -ge 1 ]; }
if wait_for 20 displaced_events; then pass "Displaced events on both"; else fail "Displaced events on both" "$(kubectl get events.events.k8s.io -n "$NS" 2>&1 | tail -n 8)"; fi
# what is held on set a never exceeds it: hi's one pod on one of the two nodes
if [ "$(resv_pods "$NS" hi)" -le 2 ] && holds_none "$NS" lo; then pass "set a not held twice"; else fail "set a not held twice"; fi

# ---- 2. an open window is not displaced ----------------------------------------------------------
check "open active" wait_for 20 phase_is "$NS" open Active
prio_resv hi2 60 900 1 "c$ID" "$ID-rhigh" | kubectl create -f - >/dev/null
if wait_for 30 phase_is "$NS" hi2 Failed; then pass "hi2 refused: open's window is open"; else fail "hi2 refused: open's window is open" "$(resv_phase "$NS" hi2): $(resv_message "$NS" hi2)"; fi
if phase_is "$NS" open Active && [ "$(resv_pods "$NS" open)" = 1 ] && [ "$(reservation_events "$NS" open Displaced)" = 0 ]; then
  pass "open stays Active with its hold, no Displaced event"
else
  fail "open stays Active with its hold, no Displaced event" "$(kubectl get reservation -n "$NS" open -o jsonpath='{.status}')"
fi

# ---- 3. unknown class ----------------------------------------------------------------------------
prio_resv nocls 300 900 1 "b$ID" "$ID-nosuch" | kubectl create -f - >/dev/null
if wait_for 30 phase_is "$NS" nocls Failed && [[ $(resv_message "$NS" nocls) == *"spec.priorityClassName: no PriorityClass named $ID-nosuch"* ]]; then
  pass "unknown class: Failed naming the field"
else
  fail "unknown class: Failed naming the field" "$(resv_phase "$NS" nocls): $(resv_message "$NS" nocls)"
fi
if phase_is "$NS" mid Admitted; then pass "mid untouched by the failed one"; else fail "mid untouched by the failed one" "$(resv_message "$NS" mid)"; fi
summary
