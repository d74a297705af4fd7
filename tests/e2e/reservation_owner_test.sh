#!/usr/bin/env bash
# tests/e2e/reservation_owner_test.sh: the owner's side of a Reservation on the live scheduler,
# with the ordering that let an owner's pod leak forced here rather than left to load: the
# owner's pods are schedulable (no gate) BEFORE the window opens, while free nodes outside the
# hold have room for them. Own kwok nodes: 4 of 2 cores; the reservation holds 2 of them whole
# for 2 pods of 2 cores; the owner has 3 such pods (one more than held).
#  1. before the window: none of the owner's pods binds, although 2 free nodes would take them;
#     their PodScheduled condition says they wait for the window; the spec's startTime is moved
#     earlier after the admission (as the planner does when its plan moves): the admitted window
#     still decides (phase and owner's rule);
#  2. the window opens: 2 of them bind on the 2 held nodes; the third, for which the hold has no
#     room left, falls back to normal placement (a free node);
#  3. a Reservation and its owner's pod created together (the pod seen before the admission):
#     the pod waits quietly for the admission, then binds on the node held for it;
#  4. nothing over capacity, no errors.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

sched_e2e_begin resv-owner ro
SET=o$ID
AHEAD=25 # seconds from creation to the window
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: $P, count: 4, cpu: 2, memory: 8Gi, pods: 20,
     labels: {tarema.io/e2e-set: "$SET", tarema.io/group: "ro$ID"}}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start

OWNER="{\"selector\":{\"matchLabels\":{\"step\":\"own-$ID\"}}}"
reservation_json "$NS" step 2 0 2 2 "$SET" "$OWNER" | jq -c --arg st "$(rfc3339 "$AHEAD")" --arg en "$(rfc3339 600)" '.spec.startTime = $st | .spec.endTime = $en' >"$WORK/resv.json"
kubectl create -f "$WORK/resv.json" >/dev/null
T_START=$(($(date +%s) + AHEAD))
if wait_for 20 phase_is "$NS" step Admitted; then pass "reservation admitted"; else fail "reservation admitted" "phase '$(resv_phase "$NS" step)': $(resv_message "$NS" step)"; fi
HELD=$(resv_nodes "$NS" step)
if [ "$(echo "$HELD" | grep -c "^$P-")" = 2 ]; then pass "2 nodes held"; else fail "2 nodes held" "$HELD"; fi

# The spec's window moved earlier after the admission, as the planner patches it when its plan
# moves: the holds keep the admitted window, and so do the phase and the owner's rule.
kubectl patch reservation -n "$NS" step --type merge -p "{\"spec\":{\"startTime\":\"$(rfc3339 3)\"}}" >/dev/null
# Past the moved start (3 s) and short of the admitted one (25 s): Admitted at every poll for 6 s
# (a failed read is no phase, so not "Admitted").
if always_for 6 phase_is "$NS" step Admitted; then pass "spec moved earlier: still Admitted until the admitted window opens"; else fail "spec moved earlier: still Admitted until the admitted window opens" "phase $(resv_phase "$NS" step): $(resv_message "$NS" step)"; fi

# ---- 1. the owner's pods, schedulable before the window --------------------------------------------
for i in 1 2 3; do
  set_pod_json "$NS" "owner-$i" "$SCHED" "$SET" 2 "{\"step\":\"own-$ID\"}" '{}'
done >"$WORK/pods.json"
kubectl create -f "$WORK/pods.json" >/dev/null
waits() { [[ $(kubectl get pod -n "$NS" owner-1 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}') == *"Reservation window has not opened yet"* ]]; }
if wait_for 15 waits; then pass "before the window: the owner's pods wait for it (PodScheduled says so)"; else fail "before the window: the owner's pods wait for it (PodScheduled says so)" "$(kubectl get pod -n "$NS" owner-1 -o jsonpath='{.status.conditions}')"; fi
out=$("$BIN/tarema-scheduler" explain "$NS/owner-1" --scheduler-name "$SCHED" 2>&1)
if grep -q "^reservation: owner of Reservation $NS/step (Admitted, window opens at .*): the pod waits for the window" <<<"$out"; then pass "explain names the owner's rule that applies (waits for the window)"; else fail "explain names the owner's rule that applies (waits for the window)" "$(grep -i reserv <<<"$out" | head -5)"; fi
# A pod found bound is judged by when it was bound (its PodScheduled=True transition, whole
# seconds, so a bind in the window's first second reads as the window's start), never by when
# this loop happened to look: on a loaded machine a poll that began before the window may read
# a pod the open window has just bound (seen once in a full run, owner-3 on a free node).
W_START=$(date -d "$(jq -r .spec.startTime "$WORK/resv.json")" +%s)
bound_at() { # NS POD: epoch of the pod's PodScheduled=True transition
  date -d "$(kubectl get pod -n "$1" "$2" -o json | jq -r '[.status.conditions[]? | select(.type == "PodScheduled" and .status == "True")][0].lastTransitionTime // empty')" +%s 2>/dev/null
}
bound_before=""
while [ "$(date +%s)" -lt $((T_START - 2)) ]; do
  for i in 1 2 3; do
    not_bound "$NS" "owner-$i" && continue
    at=$(bound_at "$NS" "owner-$i")
    [ -n "$at" ] && [ "$at" -ge "$W_START" ] && continue
    bound_before="$bound_before owner-$i:'$(pod_node "$NS" "owner-$i" 2>&1)' bound at ${at:-?}, window at $W_START"
  done
  [ -n "$bound_before" ] && break
  sleep 1
done
if [ -z "$bound_before" ]; then pass "before the window: none bound, although 2 free nodes had room"; else fail "before the window: none bound, although 2 free nodes had room" "$bound_before"; fi

# ---- 2. the window opens ---------------------------------------------------------------------------
all_bound() { local i; for i in 1 2 3; do is_bound "$NS" "owner-$i" || return 1; done; }
if wait_for $((T_START - $(date +%s) + 30)) all_bound; then
  pass "the window opens: the owner's 3 pods bind ($(($(date +%s) - T_START)) s after startTime)"
else
  fail "the window opens: the owner's 3 pods bind" "$(kubectl get pods -n "$NS" -o wide)"
fi
on_held=0
off=""
for i in 1 2 3; do
  n=$(pod_node "$NS" "owner-$i")
  if echo "$HELD" | qgrep -x "$n"; then on_held=$((on_held + 1)); else off="$off $n"; fi
done
if [ "$on_held" = 2 ]; then pass "2 of them on the 2 held nodes"; else fail "2 of them on the 2 held nodes" "$on_held on held nodes ($(echo $HELD)); off:$off"; fi
if [ "$(wc -w <<<"$off")" = 1 ] && ! echo "$HELD" | qgrep -x "${off# }"; then pass "the third (hold full) falls back to a free node ($off)"; else fail "the third (hold full) falls back to a free node" "off:$off"; fi

# ---- 3. a Reservation and its owner's pod created together ---------------------------------------
# One node is free now. A reservation for 1 pod of 2 cores from now and its owner's pod, in one
# `kubectl create`: the pod reaches the scheduler before the admission (the controller's next
# tick), and waits for it quietly (no FailedScheduling) instead of taking the free node the
# admission needs; then it binds on the node held for it.
NOW_OWNER="{\"selector\":{\"matchLabels\":{\"step\":\"now-$ID\"}}}"
{
  reservation_json "$NS" now 0 600 1 2 "$SET" "$NOW_OWNER"
  set_pod_json "$NS" now-1 "$SCHED" "$SET" 2 "{\"step\":\"now-$ID\"}" '{}'
} >"$WORK/now.json"
kubectl create -f "$WORK/now.json" >/dev/null
if wait_for 20 is_bound "$NS" now-1; then pass "created together: the owner's pod binds"; else fail "created together: the owner's pod binds" "$(kubectl get pods -n "$NS" -o wide; resv_phase "$NS" now; resv_message "$NS" now)"; fi
NOW_HELD=$(resv_nodes "$NS" now)
if [ -n "$NOW_HELD" ] && [ "$(pod_node "$NS" now-1)" = "$NOW_HELD" ]; then pass "created together: admitted, and the pod on the node held for it"; else fail "created together: admitted, and the pod on the node held for it" "phase $(resv_phase "$NS" now): $(resv_message "$NS" now); pod on $(pod_node "$NS" now-1)"; fi
ev=$(kubectl get events.events.k8s.io -n "$NS" -o json | jq -r '.items[] | select(.reason == "FailedScheduling" and .regarding.name == "now-1") | .note')
if [ -z "$ev" ]; then pass "created together: no FailedScheduling on the pod"; else fail "created together: no FailedScheduling on the pod" "$ev"; fi

# ---- 4. ---------------------------------------------------------------------------------------------
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its capacity"; else fail "no node over its capacity" "$out"; fi
if grep -q "ERROR\|level=error" "$WORK/sched.log"; then fail "no errors logged" "$(grep -h "ERROR\|level=error" "$WORK/sched.log" | head -3)"; else pass "no errors logged"; fi
summary
