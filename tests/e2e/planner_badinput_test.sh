#!/usr/bin/env bash
# planner_badinput_test.sh: bad workflows on the real API server: `tarema-planner submit`
# refuses cycles, unknown dependencies, a step larger than the live cluster, an unsupported CWL
# feature and a deployment file missing a tool with an error naming the step or field, and
# creates nothing; --dry-run creates nothing either. A bad Workflow written around the CLI
# (kubectl apply) is marked Failed by the controller with the same message, and the controller
# creates no pod, reservation or pod group for it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/planner_lib.sh"
FX="$REPO_ROOT/tests/fixtures/planner"

planner_e2e_begin

none_created() {
  [ "$(count_lines kubectl -n "$NS" get workflows,pods,reservations,podgroups.scheduling.x-k8s.io -o name)" = 0 ]
}
# bad NAME EXPECTED-TEXT FILE [ARGS...]: exit 1, the message, nothing created
bad() {
  local name=$1 want=$2; shift 2
  check "$name" bash -c 'want=$1; shift; out=$("$PL" submit "$@" -n "$NS" --wait 0s 2>&1); rc=$?
    [ $rc = 1 ] || { echo "exit status $rc: $out"; exit 1; }
    grep -qF -- "$want" <<<"$out" || { echo "$out"; exit 1; }
    [ "$(count_lines kubectl -n "$NS" get workflows,pods,reservations,podgroups.scheduling.x-k8s.io -o name)" = 0 ] || { echo "something was created"; exit 1; }' _ "$want" "$@"
}

cat >"$W/cycle.yaml" <<'Y'
name: cycle
steps:
  - {name: A, after: [B], requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}
  - {name: B, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}
Y
bad "cycle" "the steps' dependencies form a cycle: B -> A -> B" "$W/cycle.yaml"
sed 's/after: \[LES\]/after: [LESS]/' "$FX/turbine.yaml" >"$W/unknown.yaml"
bad "unknown dependency" "step 'HPDA': after: unknown step 'LESS'" "$W/unknown.yaml"
sed 's/cpu: 36/cpu: 5000/' "$FX/turbine.yaml" >"$W/big.yaml"
bad "step larger than the cluster" "step 'LES' is larger than the cluster" "$W/big.yaml"
sed 's/^    out: \[fields\]$/    out: [fields]\n    scatter: mesh/' "$FX/turbine.cwl" >"$W/scatter.cwl"
bad "unsupported CWL feature" "unsupported CWL feature 'scatter'" "$W/scatter.cwl" --deployment "$FX/turbine-deploy.yaml"
echo 'tools: {les: {image: les:1.0}}' >"$W/deploy.yaml"
bad "deployment file missing a tool" "no entry for tool 'hpda' (step HPDA)" "$FX/turbine.cwl" --deployment "$W/deploy.yaml"
bad "CWL without deployment file" "--deployment FILE" "$FX/turbine.cwl"
sed 's/^name: e2e$/name: Bad_Name/' "$FX/e2e-3step.yaml" >"$W/badname.yaml"
bad "a workflow name Kubernetes refuses" "Bad_Name" "$W/badname.yaml"
sed 's/coresMin: 36, ramMin: 65536/coresMin: 2, ramMin: 1024/' "$FX/turbine.cwl" >"$W/small.cwl"
check "dry run: the Workflow printed, nothing created" bash -c "'$PL' submit '$W/small.cwl' --deployment '$FX/turbine-deploy.yaml' -n '$NS' --dry-run > '$W/dry.json' 2>'$W/dry.err' &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"kind\"]==\"Workflow\" and [s[\"name\"] for s in d[\"spec\"][\"steps\"]]==[\"LES\",\"HPDA\"], d' '$W/dry.json' &&
  grep -q 'nothing created' '$W/dry.err' && [ \$(count_lines kubectl -n $NS get workflows -o name) = 0 ]"

# around the CLI: the controller refuses it the same way and creates nothing
planner_start --leader-elect false
kubectl apply -n "$NS" -f - >/dev/null <<'Y'
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: loop}
spec:
  steps:
    - {name: A, after: [B], requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}
    - {name: B, after: [A], requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}
Y
check "kubectl apply of a cycle: Failed with the cycle named" bash -c "wait_for 20 wf_phase_is loop Failed && kwf loop .status.message | grep -qE 'cycle: (A -> B -> A|B -> A -> B)'"
kubectl apply -n "$NS" -f - >/dev/null <<'Y'
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: huge}
spec:
  steps:
    - {name: big, pods: 5, requests: {cpu: 4, memory: 1Gi}, duration: 1m, image: x}
Y
check "kubectl apply of a step larger than the planner's nodes: Failed naming it" bash -c "wait_for 20 wf_phase_is huge Failed && kwf huge .status.message | grep -q \"step 'big' is larger than the cluster\""
check "nothing created for either" bash -c "[ \$(count_lines kubectl -n $NS get pods,reservations,podgroups.scheduling.x-k8s.io -o name) = 0 ]"
check "Warning events name the reason" bash -c "kubectl -n $NS get events -o jsonpath='{range .items[*]}{.reason} {.regarding.name}{.involvedObject.name}{\"\\n\"}{end}' | grep -q '^Invalid loop' &&
  kubectl -n $NS get events -o jsonpath='{range .items[*]}{.reason} {.regarding.name}{.involvedObject.name}{\"\\n\"}{end}' | qgrep '^Unplannable huge'"

summary
