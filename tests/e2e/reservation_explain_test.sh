#!/usr/bin/env bash
# tests/e2e/reservation_explain_test.sh: `tarema-scheduler explain` sees Reservations, as the
# live scheduler honours them (the same Reservation Filter plugin, scheduler/plugins/reservation/resv_plugin.h, fed
# with the reservations listed from the API server). Own kwok nodes: 3 of 2 cores.
#  1. the live scheduler admits two reservations of one whole node each: "now" (window open
#     within seconds, phase Active) and "later" (from 2 minutes ahead);
#  2. a pod of unknown expected end fills the third node;
#  3. explain of a pending non-owner pod (2 cores, unknown end): both held nodes are refused by
#     filter "Reservation" with the plugin's reasons (inside a window; before a window and the
#     pod's end unknown), in -o json and in the text, and the FailedScheduling message counts
#     them;
#  4. explain of the "now" owner's pod: its held node is feasible and selected;
#  5. explain of a pod that ends before "later" opens (backfill): that node is feasible.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

sched_e2e_begin resv-x rx
SET=x$ID
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: $P, count: 3, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "$SET"}}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start

sel() { echo "{\"selector\":{\"matchLabels\":{\"step\":\"$1\"}}}"; }
{
  reservation_json "$NS" now 4 900 1 2 "$SET" "$(sel n$ID)"
  reservation_json "$NS" later 120 900 1 2 "$SET" "$(sel l$ID)"
} | kubectl create -f - >/dev/null
if wait_for 30 phase_is "$NS" later Admitted && wait_for 30 phase_is "$NS" now Active; then
  pass "reservations admitted (now: Active, later: Admitted)"
else
  fail "reservations admitted" "now $(resv_phase "$NS" now): $(resv_message "$NS" now); later $(resv_phase "$NS" later): $(resv_message "$NS" later)"
fi
NOW_NODE=$(resv_nodes "$NS" now)
LATER_NODE=$(resv_nodes "$NS" later)
if [ "$(echo $NOW_NODE $LATER_NODE | wc -w)" = 2 ] && [ "$NOW_NODE" != "$LATER_NODE" ]; then
  pass "one node held by each ($NOW_NODE, $LATER_NODE)"
else
  fail "one node held by each" "now=$NOW_NODE later=$LATER_NODE"
fi

# the third node filled by a pod of ours (unknown end: it cannot go on the held nodes)
set_pod_json "$NS" filler "$SCHED" "$SET" 2 '{}' '{}' | kubectl create -f - >/dev/null
if wait_for 30 is_bound "$NS" filler; then pass "filler bound"; else fail "filler bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
FREE=$(pod_node "$NS" filler)
if [ "$FREE" != "$NOW_NODE" ] && [ "$FREE" != "$LATER_NODE" ]; then pass "filler kept off the held nodes"; else fail "filler kept off the held nodes" "$FREE"; fi

# explained pods belong to a scheduler that does not run: they stay pending
NOBODY=nobody-$ID
{
  set_pod_json "$NS" other "$NOBODY" "$SET" 2 '{}' '{}'
  set_pod_json "$NS" owner "$NOBODY" "$SET" 2 "{\"step\":\"n$ID\"}" '{}'
  set_pod_json "$NS" short "$NOBODY" "$SET" 1 '{}' '{"tarema.io/expected-duration": "30s"}'
} | kubectl create -f - >/dev/null

explain() { "$BIN/tarema-scheduler" explain "$NS/$1" "${@:2}" --scheduler-name "$SCHED" 2>>"$WORK/err"; }
# node_field JSON NODE FIELD
node_field() { jq -r --arg n "$2" --arg f "$3" '.nodes[] | select(.name == $n) | .[$f] // "" | tostring' <<<"$1"; }

json=$(explain other -o json)
INSIDE="node(s) were reserved for another owner's pods"
BEFORE="node(s) were reserved from a later time and the pod's expected end is unknown or after it"
if [ "$(node_field "$json" "$NOW_NODE" filter)" = Reservation ] && [ "$(node_field "$json" "$NOW_NODE" reason)" = "$INSIDE" ] &&
  [ "$(node_field "$json" "$LATER_NODE" filter)" = Reservation ] && [ "$(node_field "$json" "$LATER_NODE" reason)" = "$BEFORE" ]; then
  pass "explain -o json: both held nodes refused by Reservation with its reasons"
else
  fail "explain -o json: both held nodes refused by Reservation" "$(jq -c '.nodes[] | select(.filter == "Reservation" or .name == "'"$NOW_NODE"'" or .name == "'"$LATER_NODE"'")' <<<"$json" 2>&1) $(tail -n 3 "$WORK/err")"
fi
msg=$(jq -r '.message' <<<"$json")
if [[ $msg == *"1 $INSIDE"* && $msg == *"1 $BEFORE"* && $msg == *"1 Insufficient cpu"* ]]; then
  pass "FailedScheduling text counts the reserved nodes: $msg"
else
  fail "FailedScheduling text counts the reserved nodes" "$msg"
fi
text=$(explain other)
if grep -F "$NOW_NODE" <<<"$text" | qgrep -F "reserved for another owner" && grep -F "$LATER_NODE" <<<"$text" | qgrep -F "reserved from a later time"; then
  pass "explain (text): the held nodes' lines say they are reserved"
else
  fail "explain (text): the held nodes' lines say they are reserved" "$text"
fi

json=$(explain owner -o json)
if [ "$(node_field "$json" "$NOW_NODE" feasible)" = true ] && [ "$(jq -r .selected <<<"$json")" = "$NOW_NODE" ]; then
  pass "explain: the owner's pod goes to its held node"
else
  fail "explain: the owner's pod goes to its held node" "$(jq -c '{selected, message}' <<<"$json" 2>&1)"
fi
json=$(explain short -o json)
if [ "$(node_field "$json" "$LATER_NODE" feasible)" = true ] && [ "$(jq -r .selected <<<"$json")" = "$LATER_NODE" ]; then
  pass "explain: a pod ending before the window backfills on the later-held node"
else
  fail "explain: a pod ending before the window backfills" "$(jq -c '{selected, message}' <<<"$json" 2>&1)"
fi
summary
