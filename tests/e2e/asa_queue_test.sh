#!/usr/bin/env bash
# tests/e2e/asa_queue_test.sh: ASA's pro-active submission saves queue time in tarema-scheduler
# (issue 18; docs/asa.md "Queue age"), against the real API server, on this test's own node
# (2 cpu, tainted) with the gates the planner sets (tarema.io/planned, then the order gate
# tarema.io/after-predecessors alone):
#  1. a proactive step's pod created early with both gates; the planner's gate removed (only
#     the order gate left): it stays Pending, never tried (no bind, no FailedScheduling event)
#  2. background pods arrive later, and an on-completion step's pod (created as early, with
#     tarema.io/planned only) is ungated after them; the node is full (a blocker)
#  3. the order gate removed, the blocker deleted: the proactive step's pod binds first, before
#     the later arrivals; the on-completion pod binds only after them (it joined the queue at
#     its ungating).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

ID=$SCHED_E2E_ID
NS=asaq-e2e-$ID
SCHED=tarema-asaq-$ID
P=aq$ID # node prefix
WORK=$(mktemp -d)
cleanup() {
  stop_schedulers
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl get nodes -o name 2>/dev/null | grep "^node/$P" | xargs -r kubectl delete --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

command -v kubectl >/dev/null || { fail "kubectl in PATH" "run under tests/run.sh or eval hack/cluster.sh env"; summary; exit 1; }
kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
cat >"$WORK/nodes.yaml" <<YAML
nodes:
  - {prefix: ${P}n, count: 1, cpu: 2, memory: 4Gi, pods: 20,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "g", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
YAML
check "test node created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
# short backoffs: once a pod's backoff is over, the queue order alone decides who goes first.
# 100 ms (was 200 ms doubling up to 500 ms): the waiting pods are retried, and backed off again,
# on every cluster event (a bind, kwok marking the bound pod Running); if one came within the
# backoff before a `free` below, the pod still backing off missed the wake-up and a later
# arrival could bind first. The 1 s between a bind and the next free is 10 times 100 ms.
printf 'podInitialBackoffMs: 100\npodMaxBackoffMs: 100\n' >"$WORK/sched.yaml"
if ! start_scheduler "$WORK/sched.log" --config "$WORK/sched.yaml" --scheduler-name "$SCHED" \
  --namespaces "$NS" --log-level debug; then
  fail "tarema-scheduler starts and becomes ready" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler starts and becomes ready"
PORT=$SCHED_PORT

# pod NAME CPU GATES_JSON: one pod of this test on its node, with those gates.
pod() {
  pod_json "$NS" "$1" "$SCHED" "$2" 256Mi '{}' "$ID" |
    jq -c --arg id "$ID" --argjson g "$3" '.spec.nodeSelector = {"tarema.io/e2e": $id}
      | if ($g | length) > 0 then .spec.schedulingGates = $g else . end'
}
# drop_gate NAME GATE: removes one gate, keeps the others (as the planner does)
drop_gate() {
  local g
  g=$(kubectl get pod -n "$NS" "$1" -o json | jq -c --arg g "$2" '[.spec.schedulingGates[]? | select(.name != $g)]')
  kubectl patch pod -n "$NS" "$1" --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/schedulingGates\", \"value\": $g}]" >/dev/null
}
bound() { [ -n "$(pod_node "$NS" "$1")" ]; }
events_of() { kubectl get events.events.k8s.io -n "$NS" -o json | jq -r --arg n "$1" '.items[] | select(.regarding.name == $n) | "\(.reason): \(.note)"'; }
# the pods placed so far, in the order tarema-scheduler assumed them (its debug log)
placed() { grep -oE "assumed pod=$NS/[a-z0-9-]+" "$WORK/sched.log" | sed "s|.*/||" | tr '\n' ' '; }
# free NAME: deletes a bound pod (its capacity goes to the next pod in the queue)
free() {
  kubectl delete pod -n "$NS" "$1" --grace-period=0 --force >/dev/null 2>&1
  wait_for 30 bash -c "! kubectl get pod -n $NS $1 >/dev/null 2>&1"
}

# ---- 1. the node full; the step's pods created early, gated ----------------------------------
pod blocker 2 '[]' | kubectl create -f - >/dev/null
check "the blocker takes the node" wait_for 20 bound blocker
pod step 2 '[{"name": "tarema.io/planned"}, {"name": "tarema.io/after-predecessors"}]' | kubectl create -f - >/dev/null
pod late 2 '[{"name": "tarema.io/planned"}]' | kubectl create -f - >/dev/null
sleep 1
drop_gate step tarema.io/planned # ungateAt: held by the order gate alone
sleep 1
# ---- 2. later arrivals ------------------------------------------------------------------------
pod bg-1 2 '[]' | kubectl create -f - >/dev/null
sleep 1
pod bg-2 2 '[]' | kubectl create -f - >/dev/null
sleep 1
drop_gate late tarema.io/planned # on-completion: ungated after bg-1 and bg-2 arrived
sleep 1
if ! bound step && [ "$(kubectl get pod -n "$NS" step -o jsonpath='{.spec.schedulingGates[*].name}')" = tarema.io/after-predecessors ]; then
  pass "the held pod (order gate alone) stays Pending"
else
  fail "the held pod (order gate alone) stays Pending" "node $(pod_node "$NS" step)"
fi
ev=$(events_of step)
if ! grep -q "FailedScheduling\|Scheduled" <<<"$ev"; then pass "no scheduling event for the held pod"; else fail "no scheduling event for the held pod" "$ev"; fi
tried=$(grep -E "pod=$NS/step" "$WORK/sched.log" | grep -Ei "assumed|bind|409|unschedulable" || true)
if [ -z "$tried" ]; then pass "no attempt on the held pod in the scheduler's log"; else fail "no attempt on the held pod in the scheduler's log" "$tried"; fi
g=$(metric "$PORT" 'tarema_pending_pods{queue="gated"}')
if [ "$g" = 1 ]; then pass "the held pod is counted as gated"; else fail "the held pod is counted as gated" "gated = $g"; fi

# ---- 3. order gate removed, capacity freed: the step goes first -------------------------------
drop_gate step tarema.io/after-predecessors
sleep 1.5 # every backoff over: the queue order decides
free blocker
wait_for 20 bound step
if [ "$(placed)" = "blocker step " ]; then pass "the proactive step's pod binds before the later arrivals"; else fail "the proactive step's pod binds before the later arrivals" "placed: $(placed)"; fi
for p in step bg-1 bg-2; do
  sleep 1
  free "$p"
  wait_for 20 bash -c "[ \$(kubectl get pods -n $NS -o json | jq '[.items[] | select(.spec.nodeName // \"\" != \"\")] | length') = 1 ]"
done
wait_for 20 bound late
if [ "$(placed)" = "blocker step bg-1 bg-2 late " ]; then
  pass "bind order: blocker step bg-1 bg-2 late (the on-completion pod after the later arrivals)"
else
  # what the scheduler did from the step's placement on: enough to tell a queue-order fault from a
  # backoff or backfill one without running the test again
  fail "bind order: blocker step bg-1 bg-2 late" "placed: $(placed)
$(sed -n "/assumed pod=$NS\/step /,\$p" "$WORK/sched.log" | grep -E "bg-|/late|changed|backfill|retried|flush" | head -n 40)"
fi
c=$(metric "$PORT" 'tarema_binds_total{result="conflict"}')
if [ "${c:-0}" = 0 ]; then pass "no 409 conflict on bind"; else fail "no 409 conflict on bind" "conflicts $c"; fi
summary
