#!/usr/bin/env bash
# tests/e2e/gang_arrival_test.sh: the arrival race of gangs on the live scheduler. The order in
# which a gang's objects reach the scheduler's informers is forced here, so the race does not
# depend on load:
#  1. the pods are created before their PodGroup (3 s before): they wait quietly (no
#     FailedScheduling event) and the gang binds whole once the PodGroup arrives;
#  2. the members of a gang arrive one by one (1 s apart): no FailedScheduling while the gang is
#     short of minMember, the gang binds whole;
#  3. a PodGroup that never comes: quiet during the arrival grace, then reported clearly
#     (FailedScheduling "waiting for PodGroup NS/NAME to exist"), nothing bound.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

sched_e2e_begin gang-arrival ga
GRACE_S=15 # gang_live.c ARRIVAL_GRACE_MS
if ! why=$(gang_require_api podgroup); then fail "the PodGroup API is served" "$why"; summary; exit 1; fi
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: $P, count: 3, cpu: 4, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e: "$ID"}, taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start
export GANG_POD_PATCH=".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
  | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"}"

# (count_lines: nothing and status 1 when the list fails, never "none bound")
bound_of() { count_lines kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'; }
# FailedScheduling events on the pods of gang NAME: "pod: note" lines; status 1 when the list fails
failed_events() {
  read_ok kubectl get events.events.k8s.io -n "$NS" -o json |
    jq -r --arg g "$1-" '.items[] | select(.reason == "FailedScheduling" and .regarding.kind == "Pod" and (.regarding.name | startswith($g))) | "\(.regarding.name): \(.note)"'
}

# ---- 1. pods before their PodGroup -------------------------------------------------------------
gang_pods_json podgroup "$NS" late 1 3 "$SCHED" 1 64Mi | kubectl create -f - >/dev/null
# no event can show that the scheduler held them (they wait quietly): none bound at every poll
# for 3 s (always_for), not once after a sleep
none_late() { [ "$(bound_of late)" = 0 ]; }
if always_for 3 none_late; then pass "pods before their PodGroup: none bound yet"; else fail "pods before their PodGroup: none bound yet" "bound '$(bound_of late 2>&1)'"; fi
gang_group_json podgroup "$NS" late 3 | kubectl create -f - >/dev/null
all_late() { [ "$(bound_of late)" = 3 ]; }
if wait_for 20 all_late; then pass "the PodGroup arrives: the gang binds whole"; else fail "the PodGroup arrives: the gang binds whole" "bound $(bound_of late); $(grep late "$WORK/sched.log" | tail -3)"; fi
ev=$(failed_events late) || ev="unread: listing the events failed"
if [ -z "$ev" ]; then pass "no FailedScheduling while the PodGroup was not known"; else fail "no FailedScheduling while the PodGroup was not known" "$ev"; fi

# ---- 2. members one by one ---------------------------------------------------------------------
gang_group_json podgroup "$NS" trickle 3 | kubectl create -f - >/dev/null
for i in 1 2 3; do
  gang_pods_json podgroup "$NS" trickle "$i" "$i" "$SCHED" 1 64Mi | kubectl create -f - >/dev/null
  sleep 1
done
all_trickle() { [ "$(bound_of trickle)" = 3 ]; }
if wait_for 20 all_trickle; then pass "members one by one: the gang binds whole"; else fail "members one by one: the gang binds whole" "bound $(bound_of trickle)"; fi
ev=$(failed_events trickle) || ev="unread: listing the events failed"
if [ -z "$ev" ]; then pass "no FailedScheduling while members were arriving"; else fail "no FailedScheduling while members were arriving" "$ev"; fi

# ---- 3. a PodGroup that never comes ------------------------------------------------------------
gang_pods_json podgroup "$NS" ghost 1 2 "$SCHED" 1 64Mi | kubectl create -f - >/dev/null
T0=$(date +%s)
sleep $((GRACE_S / 2))
ev=$(failed_events ghost) || ev="unread: listing the events failed"
if [ -z "$ev" ]; then pass "missing PodGroup: quiet during the arrival grace"; else fail "missing PodGroup: quiet during the arrival grace" "$ev"; fi
reported() { failed_events ghost | qgrep "waiting for PodGroup $NS/ghost to exist"; }
if wait_for $((GRACE_S + 20)) reported; then
  pass "missing PodGroup: reported after the grace ($(($(date +%s) - T0)) s after the pods were created)"
else
  fail "missing PodGroup: reported after the grace" "events: $(failed_events ghost | head -3)"
fi
msg=$(kubectl get pod -n "$NS" ghost-1 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
if [[ $msg == *"waiting for PodGroup $NS/ghost to exist"* ]]; then pass "missing PodGroup: the pod's PodScheduled condition says why"; else fail "missing PodGroup: the pod's PodScheduled condition says why" "message: $msg"; fi
b=$(bound_of ghost)
if [ "$b" = 0 ]; then pass "missing PodGroup: nothing bound"; else fail "missing PodGroup: nothing bound" "bound $b"; fi
if grep -q "ERROR\|level=error" "$WORK/sched.log"; then fail "no errors logged" "$(grep -h "ERROR\|level=error" "$WORK/sched.log" | head -3)"; else pass "no errors logged"; fi
summary
