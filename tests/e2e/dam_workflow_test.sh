#!/usr/bin/env bash
# dam_workflow_test.sh: `tarema-dam serve` submitting a planner Workflow (submit.workflow) to the
# chosen one of two local control planes, each with the Workflow CRD, kube-scheduler and its own
# `tarema-planner run`: a 2-step workflow runs to Succeeded on the chosen cluster (a, faster
# cores) and ends the submission SUCCEEDED; a workflow whose pod fails there (its status set
# Failed, as a kubelet reports it) makes the Workflow Failed, the DAM deletes it there, bans a
# and resubmits it to b, where it succeeds; DELETE of a request cancels its running Workflow; a
# bad workflow is a 400 naming the field.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): the DAM tests share their instance names and wipe dam_requests
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dam_lib.sh"

[ -n "${DATABASE_URL:-}" ] || { fail "DATABASE_URL" "run with hack/postgres.sh up and its env"; summary; exit 1; }
dam_clusters_up a b || { fail "two control planes up"; summary; exit 1; }
PLPIDS=()
STARTED_KS=()
wf_cleanup() {
  local p c
  for p in "${PLPIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for c in "${STARTED_KS[@]}"; do TAREMA_CLUSTER_NAME=$DAM_PREFIX-$c bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1; done
  for c in a b; do kc "$c" delete workflows -l tarema.io/dam-request --wait=false >/dev/null 2>&1; done
  dam_cleanup
}
trap wf_cleanup EXIT

# Per cluster: the CRDs, kube-scheduler (binds the pods the planner ungates), the planner.
setup_cluster() {
  local c=$1 f
  kc "$c" apply -f "$REPO_ROOT/charts/tarema/crds/tarema.io_workflows.yaml" >/dev/null || return 1
  for f in $(grep -lE 'name: (podgroups.scheduling.x-k8s.io|reservations.tarema.io)' "$REPO_ROOT"/charts/tarema/crds/*.yaml); do
    kc "$c" apply -f "$f" >/dev/null || return 1
  done
  kc "$c" wait --for condition=established --timeout=30s crd/workflows.tarema.io >/dev/null || return 1
  kc "$c" delete workflows -l tarema.io/dam-request --wait=false >/dev/null 2>&1
  if ! TAREMA_CLUSTER_NAME=$DAM_PREFIX-$c bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep -E '^ +scheduler +running'; then
    TAREMA_CLUSTER_NAME=$DAM_PREFIX-$c bash "$REPO_ROOT/hack/cluster.sh" scheduler start >/dev/null 2>&1 || return 1
    STARTED_KS+=("$c")
  fi
  KUBECONFIG=$(dam_kubeconfig "$c") "$BIN/tarema-planner" run --slot 1s --tick 1s --time-limit 2s \
    --scheduler-name default-scheduler --namespace default --lease-namespace default \
    --leader-elect false --require-admission false --identity "dam-wf-$c-$$" \
    >>"$DAM_TMP/planner-$c.log" 2>&1 &
  PLPIDS+=($!)
}
for c in a b; do
  setup_cluster "$c" || { fail "cluster $c: CRDs, kube-scheduler, tarema-planner run"; summary; exit 1; }
  unload "$c"
done
dam_secrets
FED=$DAM_TMP/federation.yaml
cat >"$FED" <<EOF
clusters:
  - {name: a, kubeconfig: $(dam_kubeconfig a), namespace: default}
  - {name: b, kubeconfig: $(dam_kubeconfig b), namespace: default}
EOF
speed a 600
speed b 300
dam_reset_db
dam_start "$FED" --cluster-timeout-seconds 3 || { fail "tarema-dam serve starts"; summary; exit 1; }

# A 2-step workflow: prep, then a gang of 2 (tarema.io/duration: how long kwok runs a pod).
SUBMIT='{"job": {"name": "two", "cores": 4, "runtime": "1m"},
  "submit": {"workflow": {"name": "two", "steps": [
    {"name": "prep", "requests": {"cpu": 1, "memory": "1Gi"}, "duration": "8s", "image": "prep:1",
     "annotations": {"tarema.io/duration": "3s"}},
    {"name": "sim", "pods": 2, "requests": {"cpu": 2, "memory": "1Gi"}, "duration": "8s",
     "image": "sim:1", "after": ["prep"], "annotations": {"tarema.io/duration": "3s"}}]}}}'
# (count_lines: nothing and status 1 when the cluster did not answer, never "0")
wfs_on() { count_lines kc "$1" get workflows -l "tarema.io/dam-request=$2" --no-headers; }
# wf_gone <letter> NAME: the Workflow NAME (which the test saw created) no longer exists there
wf_gone() { local out; [ -n "$2" ] && out=$(kc "$1" get workflow "$2" 2>&1); grep -q NotFound <<<"$out"; }
export -f kc dam_kubeconfig wfs_on
export DAM_CACHE DAM_PREFIX

# ---- bad input -------------------------------------------------------------------------------
# status_and_error BODY: "<status> <error>" of a POST
status_and_error() { local out; out=$(api POST /api/v1/requests "$1"); echo "$(tail -n 1 <<<"$out") $(sed '$d' <<<"$out" | jq -r .error)"; }
JOB='"job": {"name": "x", "cores": 1, "runtime": "1m"}'
E=$(status_and_error "{$JOB, \"submit\": {\"workflow\": {\"steps\": [{\"name\": \"a\", \"requests\": {\"cpu\": 1, \"memory\": \"1Gi\"}, \"image\": \"x\"}]}}}")
check "400 naming the field: a step without duration ($E)" grep -q "^400 submit.workflow: step 'a': duration is required" <<<"$E"
E=$(status_and_error "{$JOB, \"submit\": {\"workflow\": {\"cancel\": true, \"steps\": []}}}")
check "400 naming the field: cancel is not the DAM's ($E)" grep -q "^400 submit.workflow: unknown key 'cancel'" <<<"$E"
E=$(status_and_error "{$JOB, \"submit\": {\"pods\": [], \"workflow\": {}}}")
check "400: pods and workflow together ($E)" grep -q '^400 submit: give either pods or workflow' <<<"$E"

# ---- 1. runs to Succeeded on the chosen cluster ------------------------------------------------
ID=$(post_job "$SUBMIT")
R=$(wait_state "$ID" '.submission.state == "RUNNING"')
W1=$(jq -r '.submission.attempts[0].workflow' <<<"$R")
check "submitted to the best cluster (a): Workflow $W1 there, labelled with the request" bash -c "
  [ '$(jq -r '.result.chosen + " " + .submission.cluster' <<<"$R")' = 'a a' ] &&
  kc a get workflow '$W1' -o json | jq -e '.metadata.labels[\"tarema.io/dam-request\"] == \"$ID\" and
    .metadata.labels[\"tarema.io/dam-workflow\"] == \"two\" and (.spec.steps | length) == 2' >/dev/null &&
  [ \"\$(wfs_on b $ID)\" = 0 ]"
R=$(wait_state "$ID" '.submission.state != "RUNNING"' 60)
check "the planner of a ran it to Succeeded: submission SUCCEEDED on a" has '
  .submission.state == "SUCCEEDED" and .submission.cluster == "a" and
  (.submission.attempts | length) == 1 and .submission.attempts[0].outcome == "succeeded"' "$R"
check "its pods ran on a (planner.tarema.io/workflow=$W1, all Succeeded)" bash -c "
  kc a get pods -l planner.tarema.io/workflow=$W1 -o json | jq -e '(.items | length) == 3 and all(.items[]; .status.phase == \"Succeeded\")' >/dev/null"

# ---- 2. fails on a -> failover to b ------------------------------------------------------------
ID2=$(post_job "$SUBMIT")
R=$(wait_state "$ID2" '.submission.state == "RUNNING"')
W2=$(jq -r '.submission.attempts[0].workflow' <<<"$R")
# the first step's pod fails on a, as a kubelet reports it (the workflow has no retries)
wait_for 30 bash -c "kc a get pods -l planner.tarema.io/workflow=$W2 -o json | jq -e '[.items[] | select(.status.phase == \"Running\")] | length > 0' >/dev/null"
POD=$(kc a get pods -l "planner.tarema.io/workflow=$W2" -o json | jq -r '[.items[] | select(.status.phase == "Running")][0].metadata.name')
kc a patch pod "$POD" --subresource=status --type=merge -p '{"status": {"phase": "Failed", "reason": "Error", "message": "set by the test"}}' >/dev/null
R=$(wait_state "$ID2" '.submission.cluster == "b"' 30)
check "Failed on a: a banned, the Workflow resubmitted to b as attempt 2" has '
  .failed_on == ["a"] and .result.chosen == "b" and
  (.result.excluded[] | select(.cluster == "a") | .kind == "banned") and
  .submission.attempts[0].outcome == "failed" and (.submission.attempts[0].reason | test("Failed")) and
  .submission.attempts[1].cluster == "b" and (.submission.attempts[1].workflow | endswith("-2"))' "$R"
check "the failed Workflow $W2 is deleted from a" wait_for 20 wf_gone a "$W2"
R=$(wait_state "$ID2" '.submission.state != "RUNNING"' 60)
check "the planner of b ran it to Succeeded: submission SUCCEEDED on b" has '
  .submission.state == "SUCCEEDED" and .submission.cluster == "b" and .submission.attempts[1].outcome == "succeeded"' "$R"

# ---- 3. DELETE cancels ---------------------------------------------------------------------------
ID3=$(post_job "$SUBMIT")
W3=$(wait_state "$ID3" '.submission.state == "RUNNING"' | jq -r '.submission.attempts[0].workflow')
wait_for 30 bash -c "kc a get pods -l planner.tarema.io/workflow=$W3 --no-headers 2>/dev/null | grep -q ."
check "before the DELETE: Workflow $W3 and its pods on a" bash -c "
  [ \"\$(wfs_on a $ID3)\" = 1 ] && kc a get pods -l planner.tarema.io/workflow=$W3 --no-headers | qgrep ."
D=$(api DELETE "/api/v1/requests/$ID3" | tail -n 1):$(api GET "/api/v1/requests/$ID3" | tail -n 1)
check "DELETE of a running submission: 200 then 404 ($D)" test "$D" = 200:404
check "DELETE: its Workflow is deleted from a" wait_for 20 bash -c "[ \"\$(wfs_on a $ID3)\" = 0 ]"
check "DELETE: its pods go with it (owner references, the controller-manager's collector)" \
  wait_for 30 bash -c "[ \"\$(count_lines kc a get pods -l planner.tarema.io/workflow=$W3 --no-headers)\" = 0 ]"

for c in a b; do kc "$c" annotate nodes --all tarema.io/profile- >/dev/null 2>&1; done
summary
