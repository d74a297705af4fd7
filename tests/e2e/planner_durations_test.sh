#!/usr/bin/env bash
# planner_durations_test.sh: per-group walltimes of `duration:` steps in the controller
# (docs/planner.md, `durations:`). Two of the test's four nodes are group `fast`, two `slow`:
# step a (one whole node) runs 6 s on fast and 20 s elsewhere: planned on a fast node for 6 s,
# predictedSeconds 6; step b (four whole nodes: both groups) runs 3 s on fast and 8 s on slow:
# its gang lasts its slowest group's 8 s; once bound, predictedSeconds is the walltime on the
# group the step really runs on (kube-scheduler binds it anywhere in the pool). submit refuses
# a group no node has. About 40 s, with kube-scheduler (no admission).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/planner_lib.sh"
planner_e2e_begin
for i in 1 2 3 4; do
  kubectl label node "$PL_PREFIX-$i" --overwrite "tarema.io/group=$([ "$i" -le 2 ] && echo fast || echo slow)" >/dev/null
done
planner_start --leader-elect false
cat >"$W/dur.yaml" <<Y
name: dur
steps:
  - {name: a, pods: 1, requests: {cpu: 4, memory: 1Gi}, duration: 20s, durations: {fast: 6s}, image: a:1, annotations: {tarema.io/duration: 3s}}
  - {name: b, after: [a], pods: 4, requests: {cpu: 4, memory: 1Gi}, duration: 5s, durations: {fast: 3s, slow: 8s}, image: b:1, annotations: {tarema.io/duration: 2s}}
Y
check "submit: planned" bash -c "'$PL' submit '$W/dur.yaml' -n '$NS' --wait 20s | grep -q '^step a starts at'"
field() { kwf dur "$(printf '.status.steps[?(@.name=="%s")].%s' "$1" "$2")"; }
secs() { echo $(($(date -d "$(field "$1" end)" +%s) - $(date -d "$(field "$1" start)" +%s))); }
node_a=$(field a 'nodes[0]')
check "a planned on a fast node ($node_a)" bash -c "[ '$node_a' = $PL_PREFIX-1 ] || [ '$node_a' = $PL_PREFIX-2 ]"
check "a: window 6 s, predictedSeconds 6 (fast's walltime)" bash -c "[ $(secs a) = 6 ] && [ '$(field a predictedSeconds)' = 6 ]"
check "b: window 8 s, predictedSeconds 8 (its slowest group, slow)" bash -c "[ $(secs b) = 8 ] && [ '$(field b predictedSeconds)' = 8 ]"
check "the Workflow keeps durations in its spec" bash -c "[ \"\$(kubectl -n $NS get workflow dur -o jsonpath='{.spec.steps[1].durations.slow}')\" = 8s ]"
check "workflow Succeeded" wait_for 60 wf_phase_is dur Succeeded
# kube-scheduler binds where it likes (the nodeSelector is the test's pool, not the plan):
# predictedSeconds follows the group a really ran on
ran_on=$(kubectl -n "$NS" get pod dur-a-0 -o jsonpath='{.spec.nodeName}')
want=$(case "$ran_on" in "$PL_PREFIX-1" | "$PL_PREFIX-2") echo 6 ;; *) echo 20 ;; esac)
check "a ran on $ran_on: predictedSeconds $want, its group's walltime" bash -c "[ '$(field a predictedSeconds)' = '$want' ]"
sed -e 's/^name: dur/name: dur2/' -e 's/fast: 6s/zz: 6s/' "$W/dur.yaml" >"$W/bad.yaml"
check "submit refuses a group no node has" bash -c "out=\$('$PL' submit '$W/bad.yaml' -n '$NS' 2>&1); [ \$? = 1 ] && grep -q \"step 'a': durations: node group 'zz' is not one of the cluster's\" <<<\"\$out\" && ! kubectl -n $NS get workflow dur2 >/dev/null 2>&1"
summary
