#!/usr/bin/env bash
# dam_failover_test.sh: `tarema-dam serve` submitting a request's pods to the chosen cluster of
# two local control planes (a with faster cores, b), following them and failing over: the pod
# fails on a (its status set Failed, as a kubelet reports it), a is banned for the request, its
# pods there are deleted and the request goes to b; a restart while the pods run keeps
# following them; success on b ends it SUCCEEDED. A request failing everywhere ends FAILED;
# DELETE of a running submission deletes its pods, and one during the ranking creates none.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): the DAM tests share their instance names and wipe dam_requests
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dam_lib.sh"

[ -n "${DATABASE_URL:-}" ] || { fail "DATABASE_URL" "run with hack/postgres.sh up and its env"; summary; exit 1; }
dam_clusters_up a b || { fail "two control planes up"; summary; exit 1; }
dam_secrets
FED=$DAM_TMP/federation.yaml
cat >"$FED" <<EOF
clusters:
  - {name: a, kubeconfig: $(dam_kubeconfig a), namespace: default}
  - {name: b, kubeconfig: $(dam_kubeconfig b), namespace: default}
EOF
for c in a b; do unload "$c"; kc "$c" delete pods -l tarema.io/dam-request --grace-period=0 --force >/dev/null 2>&1; done
speed a 600
speed b 300
dam_reset_db
dam_start "$FED" --cluster-timeout-seconds 3 || { fail "tarema-dam serve starts"; summary; exit 1; }

SUBMIT='{"job": {"name": "wrf", "cores": 2, "runtime": "1h"},
  "submit": {"pods": [{"metadata": {"labels": {"app": "wrf"}},
                       "spec": {"containers": [{"name": "wrf", "image": "wrf:4",
                                "resources": {"requests": {"cpu": "2"}}}]}}]}}'
# set_phase <letter> <request id> <phase> [reason]: what a kubelet reports for the pod
set_phase() {
  local pod
  pod=$(kc "$1" get pods -l "tarema.io/dam-request=$2" -o jsonpath='{.items[0].metadata.name}')
  kc "$1" patch pod "$pod" --subresource=status --type=merge \
    -p "{\"status\": {\"phase\": \"$3\", \"reason\": \"${4:-}\", \"message\": \"set by the test\"}}" >/dev/null
}
# request_pods <letter> <request id>: the request's pods on that cluster, a line each; fails
# when the cluster did not answer.
request_pods() { kc "$1" get pods -l "tarema.io/dam-request=$2" --no-headers 2>/dev/null; }
# pods_on <letter> <request id>: how many; nothing and status 1 when the cluster did not answer
# (count_lines: a failed get is never "0 pods").
pods_on() { count_lines request_pods "$@"; }
# no_pods_on <letter> <request id>: the cluster answered and lists none of the request's pods. For
# wait_for: `wait_for T test "$(pods_on ...)" = 0` reads once, before wait_for runs (possibly
# before the delete is processed), and never re-polls; a failed get is not taken for none.
no_pods_on() { local out; out=$(request_pods "$@") && [ -z "$out" ]; }

ID=$(post_job "$SUBMIT")
R=$(wait_state "$ID" '.submission.state == "RUNNING"')
check "submitted to the best cluster (a, faster cores): DONE, submission RUNNING on a" has '
  .state == "DONE" and .result.chosen == "a" and .submission.cluster == "a"' "$R"
check "the pod on a carries the request label, the template's labels and restartPolicy Never" bash -c "
  $(declare -f kc dam_kubeconfig); DAM_CACHE='$DAM_CACHE' DAM_PREFIX='$DAM_PREFIX'
  set -o pipefail; kc a get pods -l tarema.io/dam-request=$ID,app=wrf -o json | jq -e '.items | length == 1 and .[0].spec.restartPolicy == \"Never\"'"

set_phase a "$ID" Failed OOMKilled
R=$(wait_state "$ID" '.submission.cluster == "b" and .submission.state == "RUNNING"')
check "failover: a failed pod bans a for the request and moves it to b" has '
  .failed_on == ["a"] and .result.chosen == "b" and
  (.result.excluded[] | select(.cluster == "a") | .kind == "banned") and
  .submission.attempts[0].cluster == "a" and .submission.attempts[0].outcome == "failed" and
  (.submission.attempts[0].reason | test("OOMKilled")) and .submission.attempts[1].cluster == "b"' "$R"
check "failover: the failed attempt's pods are deleted from a" wait_for 20 no_pods_on a "$ID"

dam_stop
dam_start "$FED" --cluster-timeout-seconds 3 || fail "restart"
set_phase b "$ID" Succeeded
R=$(wait_state "$ID" '.submission.state != "RUNNING"')
check "after a restart the submission is still followed: SUCCEEDED on b" has '
  .submission.state == "SUCCEEDED" and .submission.cluster == "b" and .submission.attempts[1].outcome == "succeeded"' "$R"

ID2=$(post_job "$SUBMIT")
wait_state "$ID2" '.submission.cluster == "a"' >/dev/null
set_phase a "$ID2" Failed Error
wait_state "$ID2" '.submission.cluster == "b"' >/dev/null
set_phase b "$ID2" Failed Error
R=$(wait_state "$ID2" '.submission.state != "RUNNING"')
check "failing on every cluster: submission FAILED, both banned, no cluster chosen" has '
  .submission.state == "FAILED" and (.failed_on | sort) == ["a", "b"] and .result.chosen == null and
  (.submission.attempts | length) == 2' "$R"

ID3=$(post_job "$SUBMIT")
wait_state "$ID3" '.submission.state == "RUNNING"' >/dev/null
check "DELETE of a running submission: 200, its pods deleted, then 404" bash -c "
  $(declare -f api api_body kc dam_kubeconfig request_pods no_pods_on wait_for); DAM_TMP='$DAM_TMP' DAM_TOKEN='$DAM_TOKEN' DAM_URL='$DAM_URL' DAM_CACHE='$DAM_CACHE' DAM_PREFIX='$DAM_PREFIX'
  [ \$(api DELETE /api/v1/requests/$ID3 | tail -n 1) = 200 ] && [ \$(api GET /api/v1/requests/$ID3 | tail -n 1) = 404 ] &&
  wait_for 20 no_pods_on a $ID3 && wait_for 10 bash -c \"psql '$DATABASE_URL' -Atc \\\"SELECT count(*) FROM dam_requests WHERE id = '$ID3'\\\" | grep -qx 0\""
# DELETE while the request is being ranked (b's API server hangs: the worker waits 3 s for it):
# the ranking must not create the pods of a request that is gone
APIPID=$(cat "$DAM_CACHE/clusters/$DAM_PREFIX-b/run/apiserver.pid")
kill -STOP "$APIPID"
ID4=$(post_job "$SUBMIT")
DEL=$(api DELETE "/api/v1/requests/$ID4" | tail -n 1)
# the positive condition that ends the ranking's chance to create pods: it logs that it will not
# submit (dam/serve.c work_pending returns right after); no fixed sleep
check "DELETE while ranking: the ranking sees the request gone" wait_for 20 grep -q "request $ID4 was deleted while it was ranked: not submitted" "$DAM_TMP/serve.log"
kill -CONT "$APIPID"
kc_ready() { kc "$1" get --raw /readyz >/dev/null 2>&1; }
wait_for 20 kc_ready b
check "DELETE while ranking: 200, and no pod created anywhere (a failed read is no 0)" test "$DEL:$(pods_on a "$ID4"):$(pods_on b "$ID4")" = "200:0:0"
# since the restart: ID succeeded on b, ID2 failed on a and on b (two failovers) and ended FAILED
check "metrics: one failover per failed attempt since the restart (2), the outcomes counted (1 failed, 1 succeeded)" bash -c "
  m=\$(curl -sf '$DAM_HEALTH/metrics') || { echo 'scraping $DAM_HEALTH/metrics failed'; exit 1; }
  echo \"\$m\" | grep '^tarema_dam_'
  grep -qx 'tarema_dam_failovers_total 2' <<<\"\$m\" &&
  grep -qx 'tarema_dam_submissions_total{outcome=\"failed\"} 1' <<<\"\$m\" &&
  grep -qx 'tarema_dam_submissions_total{outcome=\"succeeded\"} 1' <<<\"\$m\""

for c in a b; do kc "$c" annotate nodes --all tarema.io/profile- >/dev/null 2>&1; kc "$c" delete pods -l tarema.io/dam-request --grace-period=0 --force >/dev/null 2>&1; done
summary
