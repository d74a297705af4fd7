#!/usr/bin/env bash
# planner_restart_test.sh: the planner controller resumes from the API server's state.
#  1. two leader-elected replicas: one leads (the Lease names it), the other stands by;
#  2. the leader is killed (SIGKILL: no Lease release) while a workflow's second step is still
#     gated; the standby takes the Lease over, finds the plan in the Workflow's status and the
#     objects by their names and labels: nothing created twice, the gated step released after
#     its predecessor, the workflow Succeeded;
#  3. a replica started after a graceful stop (Lease released) resumes at once and finishes a
#     workflow submitted while no controller ran.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/planner_lib.sh"
W=$PL_LOG_DIR
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  planner_cleanup
}
trap cleanup EXIT

if ! out=$(planner_setup 2>&1); then
  fail "set-up: namespace, nodes, CRDs, kube-scheduler" "$out"
  summary
  exit 1
fi
export NS
export -f kwf wf_phase_is step_state_is wait_for

# replica NAME: a leader-elected controller with identity NAME; its pid in PIDS and $NAME_PID
replica() {
  "$PL" run --slot 1s --tick 1s --time-limit 2s --scheduler-name default-scheduler \
    --namespace "$NS" --node-selector "$PL_SEL" --lease-namespace "$NS" --identity "$1" \
    --require-admission false \
    >>"$W/$1.log" 2>&1 &
  PIDS+=($!)
  printf -v "${1}_PID" %s $!
}
holder() { kubectl -n "$NS" get lease tarema-planner -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
holder_is() { [ "$(holder)" = "$1" ]; }

replica one
check "one replica leads" wait_for 20 holder_is one
replica two
# Nothing closes "stands by": the Lease stays with one at every poll for 2 s.
check "the second stands by" always_for 2 holder_is one

cat >"$W/r.yaml" <<'Y'
name: r
steps:
  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 8s, image: a:1, annotations: {tarema.io/duration: 6s}}
  - {name: b, after: [a], pods: 3, requests: {cpu: 3, memory: 1Gi}, duration: 6s, image: b:1, annotations: {tarema.io/duration: 3s}}
Y
check "submit: planned by the leader" bash -c "'$PL' submit '$W/r.yaml' -n '$NS' --wait 20s | grep -q '^step b starts at'"
wait_for 10 bash -c "[ \$(count_lines kubectl -n $NS get pods -l planner.tarema.io/workflow=r -o name) = 4 ]"
uids_before=$(kubectl -n "$NS" get pods,reservations,podgroups.scheduling.x-k8s.io -l planner.tarema.io/workflow=r -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}' | sort)
check "b gated when the leader dies" bash -c "[ \"\$(kubectl -n $NS get pod r-b-0 -o jsonpath='{.spec.schedulingGates[0].name}')\" = tarema.io/planned ]"
kill -9 "$one_PID"
check "the standby takes over the Lease" wait_for 40 holder_is two
check "workflow Succeeded under the new leader" wait_for 60 wf_phase_is r Succeeded
check "nothing created twice: same objects, 4 pods" bash -c "
  after=\$(kubectl -n $NS get pods,reservations,podgroups.scheduling.x-k8s.io -l planner.tarema.io/workflow=r -o jsonpath='{range .items[*]}{.metadata.uid}{\"\\n\"}{end}' | sort)
  [ \"\$after\" = '$uids_before' ] && [ \$(count_lines kubectl -n $NS get pods -l planner.tarema.io/workflow=r -o name) = 4 ]"
check "b released after a ended, by the new leader" bash -c "
  a=\$(kwf r '.status.steps[?(@.name==\"a\")].actualEnd'); b=\$(kwf r '.status.steps[?(@.name==\"b\")].releasedAt')
  [[ ! \"\$b\" < \"\$a\" ]] && grep -q 'Released: step b' '$W/two.log' && ! grep -q 'Released: step b' '$W/one.log'"

# graceful stop: the Lease is released, a workflow submitted meanwhile waits, a new replica
# plans and runs it
kill "$two_PID"
wait "$two_PID" 2>/dev/null
check "graceful stop releases the Lease" wait_for 10 holder_is ""
sed 's/^name: r$/name: s/' "$W/r.yaml" >"$W/s.yaml"
"$PL" submit "$W/s.yaml" -n "$NS" --wait 0s >/dev/null
# No controller runs, so nothing can close "not planned": it holds at every poll for 2 s, and a
# failed read of the Workflow or its pods is not "not planned".
not_planned() {
  local p c
  p=$(kwf s .status.plannedAt) && [ -z "$p" ] &&
    c=$(count_lines kubectl -n "$NS" get pods -l planner.tarema.io/workflow=s -o name) && [ "$c" = 0 ]
}
check "no controller: not planned" always_for 2 not_planned
replica three
check "a new replica leads at once" wait_for 10 holder_is three
check "and runs the waiting workflow to the end" wait_for 60 wf_phase_is s Succeeded

summary
