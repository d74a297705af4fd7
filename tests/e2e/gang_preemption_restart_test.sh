#!/usr/bin/env bash
# tests/e2e/gang_preemption_restart_test.sh: tarema-scheduler killed (SIGKILL) in the middle of a
# gang's preemption (issue 31, "restart the scheduler in the middle of a preemption: no double
# eviction, the preemptor still lands"), on this test's own 4 nodes of 4 cores with
# scheduler-plugins PodGroups:
#   - the cluster is full: gang lowa (6 x 2 cores, priority 100) and gang lowb (4 x 1 core,
#     priority 50), every pod carrying this test's finalizer, so an evicted pod stays Terminating
#     until the test lets it go: the state "victims evicted, not gone yet" is held, never raced;
#   - gang hi (12 x 1 core, priority 1000) preempts: lowa's 6 pods are evicted (Terminating), hi
#     is not bound yet;
#   - the scheduler is killed and started again: it reads the cluster back (the Terminating
#     victims, hi's nominations) and tries hi again without evicting anything more (lowb stays
#     bound, no new Preempted event);
#   - lowa's pods are let go: all 12 pods of hi are bound, lowb still bound, no node over its
#     capacity.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

if ! why=$(gang_require_api podgroup); then
  fail "the PodGroup API is served (CRD from charts/tarema/crds)" "$why"
  summary
  exit 1
fi
sched_e2e_begin gangrst gr
HOLD=tarema.io/e2e-hold
release_all() { # strips this test's finalizer from every pod of NS
  local p
  for p in $(kubectl get pods -n "$NS" -o name 2>/dev/null); do
    kubectl patch -n "$NS" "$p" --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null 2>&1
  done
  return 0
}
extra_cleanup() {
  release_all
  kubectl delete priorityclass "$ID-lower" "$ID-low" "$ID-high" --wait=false >/dev/null 2>&1
  return 0
}
sched_e2e_namespace
check "priority classes lower 50, low 100, high 1000" \
  priority_classes "$ID-lower" 50 "$ID-low" 100 "$ID-high" 1000
cat >"$WORK/nodes.yaml" <<EOF2
nodes:
  - {prefix: ${P}n, count: 4, cpu: 4, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "n", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF2
check "test nodes created (4 x 4 cores)" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
ARGS=(--scheduler-name "$SCHED" --qps 2000 --burst 4000)
sched_e2e_start "${ARGS[@]}"

# gang NAME SIZE CPU CLASS: a PodGroup gang (minMember SIZE) at the class's priority on this
# test's nodes, every pod with this test's finalizer.
gang() {
  GANG_POD_PATCH=".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
    | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"} | .spec.priorityClassName = \"$ID-$4\"
    | .metadata.finalizers = [\"$HOLD\"]" \
    gang_create podgroup "$NS" "$1" "$2" "$2" "$SCHED" "$3" 256Mi
}
pods_of() { read_ok kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o json; }
bound_of() { # NAME: pods of the gang bound and not being deleted
  local j
  j=$(pods_of "$1") || return 1
  jq '[.items[] | select((.spec.nodeName // "") != "" and .metadata.deletionTimestamp == null)] | length' <<<"$j"
}
bound_is() { local b; b=$(bound_of "$1") && [ "$b" -eq "$2" ]; }
terminating_of() { # NAME: pods of the gang being deleted
  local j
  j=$(pods_of "$1") || return 1
  jq '[.items[] | select(.metadata.deletionTimestamp != null)] | length' <<<"$j"
}
terminating_is() { local t; t=$(terminating_of "$1") && [ "$t" -eq "$2" ]; }
preempted_events() { # regarding-name lines of NS's Preempted events
  read_jq '[.items[] | select(.reason == "Preempted") | .regarding.name] | sort | .[]' \
    kubectl get events.events.k8s.io -n "$NS" -o json
}
state() {
  kubectl get pods -n "$NS" -o wide 2>&1 | head -n 30
  echo "Preempted: $(preempted_events | tr '\n' ' ')"
}

check "gang lowa created (6 x 2 cores, class low)" gang lowa 6 2 low
if wait_for 60 bound_is lowa 6; then pass "lowa bound"; else fail "lowa bound" "$(state)"; fi
check "gang lowb created (4 x 1 core, class lower)" gang lowb 4 1 lower
if wait_for 60 bound_is lowb 4; then pass "lowb bound: the 16 cores are taken"; else fail "lowb bound" "$(state)"; fi

check "gang hi created (12 x 1 core, class high)" gang hi 12 1 high
if wait_for 90 terminating_is lowa 6 && bound_is hi 0 && terminating_is lowb 0; then
  pass "preemption under way: lowa's 6 pods evicted (Terminating, held by the finalizer), hi not bound, lowb untouched"
else
  fail "preemption under way: lowa's 6 pods evicted, hi not bound, lowb untouched" "$(state)"
fi
before=$(preempted_events | sort)
n_before=$(grep -c . <<<"$before")

kill -KILL "$SCHED_PID" 2>/dev/null
wait "$SCHED_PID" 2>/dev/null
if start_scheduler "$WORK/sched-2.log" "${ARGS[@]}"; then pass "tarema-scheduler started again after SIGKILL"; else fail "tarema-scheduler started again after SIGKILL" "$(tail -n 5 "$WORK/sched-2.log")"; fi
# the restarted scheduler has read the gang back and tried it (an attempt counted)
tried() {
  local v
  v=$(metric_sum "$SCHED_PORT" 'tarema_gang_preemptions_total') && [ "${v%.*}" -gt 0 ]
}
if wait_for 60 tried; then
  pass "the restarted scheduler tried gang hi again ($(grep -o 'tarema_gang_preemptions_total{[^}]*} [0-9]*' <(curl -s "http://127.0.0.1:$SCHED_PORT/metrics") | tr '\n' ' '))"
else
  fail "the restarted scheduler tried gang hi again" "$(grep -i "gang\|preempt" "$WORK/sched-2.log" | tail -n 8)"
fi
# nothing more evicted: lowb bound and not Terminating, the same Preempted events as before
if bound_is lowb 4 && terminating_is lowb 0 && terminating_is lowa 6 && [ "$(preempted_events | sort)" = "$before" ]; then
  pass "no second eviction: lowb still bound, the same $n_before Preempted events"
else
  fail "no second eviction: lowb still bound, the same $n_before Preempted events" "$(state)"
fi
kubectl get pods -n "$NS" -l tarema.io/gang-e2e=lowa -o name | while read -r p; do
  kubectl patch -n "$NS" "$p" --type=json -p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null 2>&1
done
if wait_for 90 bound_is hi 12; then
  pass "lowa's pods gone: all 12 pods of hi bound after the restart"
else
  fail "lowa's pods gone: all 12 pods of hi bound after the restart" "$(state; grep -i "gang\|preempt" "$WORK/sched-2.log" | tail -n 8)"
fi
if bound_is lowb 4 && terminating_is lowb 0 && [ "$(preempted_events | sort)" = "$before" ]; then
  pass "lowb still bound (4), no Preempted event beyond the first $n_before"
else
  fail "lowb still bound (4), no Preempted event beyond the first $n_before" "$(state)"
fi
check "no node over-committed" check_fit
summary
