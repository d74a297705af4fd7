#!/usr/bin/env bash
# planner_controller_test.sh: `tarema-planner run` and the CLI on the real control plane (own
# namespace, 4 own kwok nodes, kube-scheduler binding the pods the planner ungates):
#  1. a 3-step workflow with a gang step (tests/fixtures/planner/e2e-3step.yaml): planned at
#     submit (the CLI prints the plan), every step's PodGroup, Reservation and gated pods
#     created with the right fields, each step ungated when its window opens and not before
#     its predecessor succeeded, bound, run, the status (predicted vs actual, makespan), `show`,
#     `list`, `kubectl get workflows`, events, the Gantt SVG;
#  2. a step running past its walltime: StepLate, the next step replanned after it, Replanned
#     event, the moved Reservation updated;
#  3. cancel: reservations and gated pods deleted, phase Cancelled;
#  4. a failed step without retries fails the workflow and releases the later steps (a pod
#     deleted while it runs counts as failed); with --retries 1 the step runs again as new pods;
#  5. a planned node goes away: the step planned on it is replanned onto the others, its
#     Reservation follows, the workflow ends.
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/planner_lib.sh"
FX="$REPO_ROOT/tests/fixtures/planner"

planner_e2e_begin
planner_start --leader-elect false

# ---- 1. the 3-step workflow -------------------------------------------------------------------
check "submit prints the plan" bash -c "'$PL' submit '$FX/e2e-3step.yaml' -n '$NS' --wait 20s > '$W/submit.txt' &&
  grep -q '^workflow $NS/e2e submitted' '$W/submit.txt' &&
  grep -qE '^step prep starts at [0-9:]+ on $PL_PREFIX-[1-4] and ends [0-9:]+$' '$W/submit.txt' &&
  grep -qE '^step sim starts at [0-9:]+ on ($PL_PREFIX-[1-4],){2}$PL_PREFIX-[1-4] and ends' '$W/submit.txt'"

# objects of every step, checked against the Workflow's status
objects_ok() {
  kubectl -n "$NS" get workflow e2e -o json >"$W/wf.json" &&
    kubectl -n "$NS" get reservations,podgroups.scheduling.x-k8s.io,pods -l planner.tarema.io/workflow=e2e -o json >"$W/objs.json" &&
    python3 - "$W/wf.json" "$W/objs.json" "$PL_SEL" <<'PY'
import json, sys
wf = json.load(open(sys.argv[1])); objs = json.load(open(sys.argv[2]))["items"]
sel = dict([sys.argv[3].split("=")])
st = {s["name"]: s for s in wf["status"]["steps"]}
spec = {s["name"]: s for s in wf["spec"]["steps"]}
by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
for name in ("prep", "sim", "post"):
    s, sp, obj = st[name], spec[name], "e2e-" + name
    pg = by[("PodGroup", obj)]
    assert pg["apiVersion"] == "scheduling.x-k8s.io/v1alpha1", pg
    assert pg["spec"]["minMember"] == sp["pods"], pg["spec"]
    r = by[("Reservation", obj)]["spec"]
    assert r["startTime"] == s["start"] and r["endTime"] == s["end"], (r, s)
    assert r["owner"] == {"kind": "PodGroup", "name": obj}, r["owner"]
    assert sorted(r["nodes"]) == sorted(set(s["nodes"])), (r["nodes"], s["nodes"])
    assert r["count"] == sp["pods"], r
    assert r["template"]["requests"] == {"cpu": str(sp["requests"]["cpu"]), "memory": sp["requests"]["memory"]}, r
    assert r["schedulerName"] == "default-scheduler", r
    pods = [o for o in objs if o["kind"] == "Pod" and o["metadata"]["labels"]["planner.tarema.io/step"] == name]
    assert len(pods) == sp["pods"], (name, len(pods))
    for p in pods:
        assert p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == obj, p["metadata"]
        assert p["spec"]["nodeSelector"] == sel, p["spec"].get("nodeSelector")
        assert p["spec"]["containers"][0]["image"] == sp["image"]
        assert p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == str(sp["requests"]["cpu"])
        assert p["metadata"]["annotations"]["tarema.io/duration"] == sp["annotations"]["tarema.io/duration"]
    if name != "prep":  # not before the predecessor succeeded
        assert all(g["name"] == "tarema.io/planned" for p in pods for g in p["spec"]["schedulingGates"]), name
        assert all(p["spec"]["schedulingGates"] for p in pods), name
PY
}
check "PodGroup, Reservation and gated pods of every step" objects_ok

check "sim gated while prep runs" bash -c "
  wait_for 60 pod_phase_is e2e-prep-0 Running || { echo 'e2e-prep-0 not Running within 60 s'; exit 1; }
  [ \"\$(kubectl -n $NS get pod e2e-sim-0 -o jsonpath='{.spec.schedulingGates[0].name}')\" = tarema.io/planned ]"

check "workflow Succeeded" wait_for 90 wf_phase_is e2e Succeeded

release_ok() {
  wf_json e2e >"$W/wf.json" && python3 - "$W/wf.json" <<'PY'
import json, sys, datetime
def t(s): return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
wf = json.load(open(sys.argv[1])); st = {s["name"]: s for s in wf["status"]["steps"]}
for name, pred in (("prep", None), ("sim", "prep"), ("post", "sim")):
    s = st[name]
    assert s["state"] == "Succeeded", s
    rel = t(s["releasedAt"])
    # on time: not before the window opens, within 3 s of it (1 s ticks)
    assert rel >= t(s["start"]), (name, "released before its window", s)
    assert rel - t(s["start"]) <= 3, (name, "released late", s)
    if pred:
        assert rel >= t(st[pred]["actualEnd"]), (name, "released before", pred, "ended")
    assert s["predictedSeconds"] > 0 and s["actualSeconds"] >= 0, s
assert wf["status"]["actualMakespanSeconds"] > 0, wf["status"]
PY
}
check "each step ungated when its window opened, after its predecessor" release_ok

check "pods bound to the planner's nodes and completed" bash -c "
  kubectl -n $NS get pods -l planner.tarema.io/workflow=e2e -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.phase}{\"\\n\"}{end}' > '$W/pods.txt'
  [ \$(wc -l < '$W/pods.txt') = 5 ] && ! grep -vE '^$PL_PREFIX-[1-4] Succeeded$' '$W/pods.txt'"

check "show: a table of the steps, predicted vs actual" bash -c "'$PL' show e2e -n '$NS' > '$W/show.txt' &&
  grep -q '^workflow $NS/e2e: Succeeded' '$W/show.txt' &&
  grep -q '^STEP .*PREDICTED .*ACTUAL .*NODES' '$W/show.txt' &&
  [ \$(grep -cE '^(prep|sim|post) +Succeeded ' '$W/show.txt') = 3 ] &&
  grep -qE '^sim +Succeeded .* 0:15 +0:[01][0-9] +($PL_PREFIX-[1-4],){2}$PL_PREFIX-[1-4]$' '$W/show.txt'"

check "list and kubectl get workflows" bash -c "'$PL' list -n '$NS' | grep -qE '^$NS +e2e +Succeeded +3 ' &&
  kubectl -n '$NS' get workflows | qgrep -E '^e2e +Succeeded '"

check "events: Planned, Released" bash -c "kubectl -n '$NS' get events --field-selector involvedObject.name=e2e -o jsonpath='{.items[*].reason}' | tr ' ' '\n' | sort -u > '$W/ev.txt'
  grep -qx Planned '$W/ev.txt' && grep -qx Released '$W/ev.txt'"

check "gantt SVG: every pod of the plan drawn" bash -c "'$PL' gantt e2e -n '$NS' --svg '$W/g.svg' >/dev/null &&
  [ \$(grep -c 'class=\"step\"' '$W/g.svg') = 5 ] && grep -q '</svg>' '$W/g.svg'"

# ---- 2. a step that overruns its walltime -----------------------------------------------------
cat >"$W/late.yaml" <<'Y'
name: late
steps:
  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 4s, image: a:1, annotations: {tarema.io/duration: 12s}}
  - {name: b, after: [a], pods: 2, requests: {cpu: 1, memory: 1Gi}, duration: 4s, image: b:1, annotations: {tarema.io/duration: 2s}}
Y
"$PL" submit "$W/late.yaml" -n "$NS" --wait 20s >/dev/null
b_start0=$(kwf late '.status.steps[?(@.name=="b")].start')
check "overrun: StepLate and Replanned events" wait_for 30 bash -c "kubectl -n $NS get events --field-selector involvedObject.name=late -o jsonpath='{.items[*].reason}' | grep -q StepLate &&
  kubectl -n $NS get events --field-selector involvedObject.name=late -o jsonpath='{.items[*].reason}' | qgrep Replanned"
# while a overruns, b is replanned once a slot: compare the two reads when they settle
check "overrun: b's plan and its Reservation moved later" bash -c "for i in \$(seq 20); do
  b=\$(kubectl -n $NS get workflow late -o jsonpath='{.status.steps[?(@.name==\"b\")].start}')
  r=\$(kubectl -n $NS get reservation late-b -o jsonpath='{.spec.startTime}')
  [[ \"\$b\" > '$b_start0' ]] && [ \"\$r\" = \"\$b\" ] && [ \$(kubectl -n $NS get workflow late -o jsonpath='{.status.replans}') -ge 1 ] && exit 0
  sleep 0.3; done; echo \"b \$b reservation \$r first $b_start0\"; exit 1"
check "overrun: b released only after a ended, workflow Succeeded" bash -c "
  wait_for 90 wf_phase_is late Succeeded || { echo \"workflow late \$(kwf late .status.phase), not Succeeded within 90 s\"; exit 1; }
  a=\$(kubectl -n $NS get workflow late -o jsonpath='{.status.steps[?(@.name==\"a\")].actualEnd}')
  b=\$(kubectl -n $NS get workflow late -o jsonpath='{.status.steps[?(@.name==\"b\")].releasedAt}')
  [[ ! \"\$b\" < \"\$a\" ]]"

# ---- 3. cancel ----------------------------------------------------------------------------------
cat >"$W/cxl.yaml" <<'Y'
name: cxl
steps:
  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 60s, image: a:1}
  - {name: b, after: [a], pods: 3, requests: {cpu: 2, memory: 1Gi}, duration: 30s, image: b:1}
  - {name: c, after: [b], requests: {cpu: 1, memory: 1Gi}, duration: 30s, image: c:1}
Y
"$PL" submit "$W/cxl.yaml" -n "$NS" --wait 20s >/dev/null
check "cancel: before, 3 reservations and 4 gated pods" bash -c "[ \$(count_lines kubectl -n $NS get reservations -l planner.tarema.io/workflow=cxl -o name) = 3 ] &&
  { wait_for 60 pod_phase_is cxl-a-0 Running || { echo 'cxl-a-0 not Running within 60 s'; exit 1; }; } &&
  [ \$(gated_pods cxl) = 4 ]"
check "cancel: the CLI waits for Cancelled" bash -c "'$PL' cancel cxl -n '$NS' --wait 20s | grep -q '^workflow $NS/cxl: Cancelled'"
check "cancel: no reservation, pod group or gated pod left" bash -c "
  for i in \$(seq 40); do
    [ \$(count_lines kubectl -n $NS get reservations,podgroups.scheduling.x-k8s.io -l planner.tarema.io/workflow=cxl -o name) = 0 ] &&
    [ \$(count_lines kubectl -n $NS get pods -l planner.tarema.io/workflow=cxl -o name) = 1 ] && exit 0
    sleep 0.5
  done; kubectl -n $NS get reservations,podgroups.scheduling.x-k8s.io,pods -l planner.tarema.io/workflow=cxl; exit 1"
check "cancel: steps b and c Cancelled, a left running" bash -c "step_state_is cxl b Cancelled && step_state_is cxl c Cancelled && [ \$(kubectl -n $NS get pod cxl-a-0 -o jsonpath='{.status.phase}') = Running ]"

kubectl -n "$NS" delete pod cxl-a-0 --wait=false >/dev/null # it would hold its core forever

# ---- 4. a failed step ---------------------------------------------------------------------------
cat >"$W/fail.yaml" <<'Y'
name: fail
steps:
  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 30s, image: a:1}
  - {name: b, after: [a], requests: {cpu: 1, memory: 1Gi}, duration: 10s, image: b:1}
Y
fail_pod() { # POD: what a kubelet reports when the container exits non-zero
  wait_for 60 pod_phase_is "$1" Running || { fail "$1 Running (to fail it)" "phase '$(kubectl -n "$NS" get pod "$1" -o jsonpath='{.status.phase}' 2>&1)' after 60 s"; return 1; }
  kubectl -n "$NS" patch pod "$1" --subresource=status --type=merge -p '{"status":{"phase":"Failed"}}' >/dev/null
}
"$PL" submit "$W/fail.yaml" -n "$NS" --wait 20s >/dev/null
fail_pod fail-a-0
check "failed step: workflow Failed naming the step" bash -c "wait_for 20 wf_phase_is fail Failed && kwf fail .status.message | grep -q 'step a failed'"
check "failed step: later reservation and gated pods released" bash -c "
  [ \$(count_lines kubectl -n $NS get reservations -l planner.tarema.io/workflow=fail,planner.tarema.io/step=b -o name) = 0 ] &&
  [ \$(count_lines kubectl -n $NS get pods -l planner.tarema.io/workflow=fail,planner.tarema.io/step=b -o name) = 0 ]"
sed 's/^name: fail$/name: gone/' "$W/fail.yaml" >"$W/gone.yaml"
"$PL" submit "$W/gone.yaml" -n "$NS" --wait 20s >/dev/null
wait_for 60 pod_phase_is gone-a-0 Running || fail "gone-a-0 Running (to delete it)" "phase '$(kubectl -n "$NS" get pod gone-a-0 -o jsonpath='{.status.phase}' 2>&1)' after 60 s"
kubectl -n "$NS" delete pod gone-a-0 --wait=false >/dev/null
check "a running step's pod deleted: the step failed, the workflow too" bash -c "wait_for 20 wf_phase_is gone Failed && kwf gone .status.message | grep -q 'step a failed'"
sed 's/^name: fail$/name: retry/; s/image: \([ab]\):1}/image: \1:1, annotations: {tarema.io\/duration: 3s}}/' "$W/fail.yaml" >"$W/retry.yaml"
"$PL" submit "$W/retry.yaml" -n "$NS" --retries 1 --wait 20s >/dev/null
fail_pod retry-a-0
check "retry: the failed step runs again as new pods, workflow Succeeded" bash -c "wait_for 40 wf_phase_is retry Succeeded && kubectl -n $NS get pod retry-a-0-r1 >/dev/null &&
  [ \"\$(kwf retry '.status.steps[?(@.name==\"a\")].attempts')\" = 1 ]"

# ---- 5. a planned node goes away ------------------------------------------------------------------
cat >"$W/ng.yaml" <<'Y'
name: ng
steps:
  - {name: a, requests: {cpu: 1, memory: 1Gi}, duration: 15s, image: a:1, annotations: {tarema.io/duration: 12s}}
  - {name: b, after: [a], pods: 3, requests: {cpu: 4, memory: 1Gi}, duration: 5s, image: b:1, annotations: {tarema.io/duration: 3s}}
Y
"$PL" submit "$W/ng.yaml" -n "$NS" --wait 20s >/dev/null
# under load the plan may come after submit's wait: b's nodes and Reservation first
b_planned() { [ -n "$(kwf ng '.status.steps[?(@.name=="b")].nodes[*]')" ] && kubectl -n "$NS" get reservation ng-b >/dev/null 2>&1; }
wait_for 60 b_planned || fail "node gone: b planned (nodes and Reservation) within 60 s" "b nodes '$(kwf ng '.status.steps[?(@.name=="b")].nodes[*]')'; $(kubectl -n "$NS" get reservation ng-b 2>&1 | tail -n 1)"
a_node=$(kwf ng '.status.steps[?(@.name=="a")].nodes[0]')
gone=$(kwf ng '.status.steps[?(@.name=="b")].nodes[*]' | tr ' ' '\n' | grep -vx "$a_node" | head -1)
kubectl delete node "$gone" --wait=false >/dev/null
check "node gone: b replanned off $gone, its Reservation too" bash -c "for i in \$(seq 40); do
  n=\$(kwf ng '.status.steps[?(@.name==\"b\")].nodes[*]'); r=\$(kubectl -n $NS get reservation ng-b -o jsonpath='{.spec.nodes[*]}')
  ! grep -qw '$gone' <<<\"\$n \$r\" && [ -n \"\$n\" ] && exit 0
  sleep 0.5; done; echo \"b on \$n, reservation \$r, gone $gone\"; exit 1"
# on failure: where the workflow stands (phase, message, each step's state and nodes) and its pods
ng_state() {
  echo "phase '$(kwf ng .status.phase)' message '$(kwf ng .status.message)'"
  echo "steps: $(kubectl -n "$NS" get workflow ng -o jsonpath='{range .status.steps[*]}{.name}={.state}@{.nodes[*]}; {end}' 2>&1)"
  echo "pods: $(kubectl -n "$NS" get pods -l planner.tarema.io/workflow=ng -o jsonpath='{range .items[*]}{.metadata.name}:{.status.phase}@{.spec.nodeName}; {end}' 2>&1)"
}
if wait_for 60 wf_phase_is ng Succeeded &&
  nodes=$(read_ok kubectl -n "$NS" get pods -l planner.tarema.io/workflow=ng -o jsonpath='{.items[*].spec.nodeName}') && [ -n "$nodes" ] &&
  ! grep -qw "$gone" <<<"$nodes"; then
  pass "node gone: workflow Succeeded on the other nodes"
else
  fail "node gone: workflow Succeeded on the other nodes" "gone $gone; $(ng_state | tr '\n' ' ')"
fi

summary
