#!/usr/bin/env bash
# dam_service_test.sh: `tarema-dam serve` against three local control planes at once (a, b, c:
# 4 kwok nodes of 8 cores, 8 of 4, 4 of 16) and PostgreSQL, over TLS with a bearer token. The ranking
# follows load (pods bound on a), node speed (tarema.io/profile annotations), data location
# (a dataset at b's storage, a slow transfer to a), the predicted wait (a's learned waits in
# its own PostgreSQL database, fed by a real `tarema-labeler serve --waits` watching a; the
# federation names it with `database:` a file, absent until then) and maintenance (a ConfigMap on b with
# overlapping windows); an unreachable cluster (c's API server killed) is excluded and
# reported while the ranking still answers; a request acknowledged just before a kill -9 is
# ranked after the restart; a hung API server is excluded after the timeout; DELETE forgets; malformed requests get 400 naming the field;
# /healthz, /readyz, /metrics.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): the DAM tests share their instance names and wipe dam_requests
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dam_lib.sh"

[ -n "${DATABASE_URL:-}" ] || { fail "DATABASE_URL" "run with hack/postgres.sh up and its env"; summary; exit 1; }
dam_clusters_up a b c || { fail "three control planes up"; summary; exit 1; }
dam_secrets
FED=$DAM_TMP/federation.yaml
cat >"$FED" <<EOF
datasets:
  - {name: era5, location: store-b, site: north, size: 40Gi}
transfers:
  - {from: store-b, to: store-a, bytes_per_s: 10Mi}
  - {from: store-b, to: store-c, bytes_per_s: 10Mi}
clusters:
  - {name: a, kubeconfig: $(dam_kubeconfig a), location: store-a, site: north, database: $DAM_TMP/database-a}
  - {name: b, kubeconfig: $(dam_kubeconfig b), location: store-b, site: north}
  - {name: c, kubeconfig: $(dam_kubeconfig c), location: store-c, site: south}
EOF
# start clean: no load, no speeds, no maintenance on any cluster
for c in a b c; do
  unload "$c"
  kc "$c" annotate nodes --all tarema.io/profile- >/dev/null 2>&1
  kc "$c" delete configmap tarema-dam-maintenance --ignore-not-found >/dev/null 2>&1
done
# a cluster that has not answered within 5 s counts as unreachable
dam_reset_db
dam_start "$FED" --cluster-timeout-seconds 5 || { fail "tarema-dam serve starts"; summary; exit 1; }

JOB='{"job": {"name": "wrf", "cores": 4, "runtime": "1h"}}'
JOB_DATA='{"job": {"name": "wrf", "cores": 4, "runtime": "1h", "datasets": ["era5"]}}'

# ---- authentication, TLS, health
check "no token: 401 on POST and GET" bash -c "
  [ \$(curl -s -o /dev/null -w '%{http_code}' --cacert '$DAM_TMP/tls.crt' -X POST -d '$JOB' '$DAM_URL/api/v1/requests') = 401 ] &&
  [ \$(curl -s -o /dev/null -w '%{http_code}' --cacert '$DAM_TMP/tls.crt' '$DAM_URL/api/v1/requests/0123456789abcdef0123456789abcdef') = 401 ] &&
  [ \$(curl -s -o /dev/null -w '%{http_code}' --cacert '$DAM_TMP/tls.crt' '$DAM_URL/api/v1/clusters') = 401 ]"
check "wrong token: 401" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert '$DAM_TMP/tls.crt' -H 'Authorization: Bearer wrong-token-wrong-token' '$DAM_URL/api/v1/clusters') = 401 ]"
# refused while the same port answers over TLS (a DAM that is down refuses plain HTTP too)
check "plain HTTP on the TLS port is refused" bash -c "[ \$(curl -s -m 5 -o /dev/null -w '%{http_code}' --cacert '$DAM_TMP/tls.crt' '$DAM_URL/api/v1/clusters') = 401 ] ||
  { echo 'the port does not answer over TLS'; exit 1; }
  code=\$(curl -s -m 5 -o /dev/null -w '%{http_code}' '${DAM_URL/https/http}/healthz'); echo \"plain HTTP: \$code\"; [ \"\$code\" != 200 ]"
check "healthz, readyz (database) and metrics on the health port without a token" bash -c "
  curl -sf '$DAM_HEALTH/healthz' | qgrep ok && curl -sf '$DAM_HEALTH/readyz' | qgrep ok &&
  curl -sf '$DAM_HEALTH/metrics' | qgrep '^tarema_dam_requests_accepted_total'"

# ---- the collector reads each cluster's own nodes
check "collected: a 4x8 cores, b 8x4 (largest node 16Gi), c 4x16 (64Gi)" bash -c "set -o pipefail
  curl -sf --cacert '$DAM_TMP/tls.crt' -H 'Authorization: Bearer $DAM_TOKEN' '$DAM_URL/api/v1/clusters' | jq -e '
  [.clusters[] | {(.name): [.cores.total, .memory / 1073741824]}] | add == {\"a\": [32, 32], \"b\": [32, 16], \"c\": [64, 64]}'"

# ---- malformed requests: 400 naming the field, nothing stored
bad() { # BODY FIELD
  local out
  out=$(api POST /api/v1/requests "$1")
  [ "$(tail -n 1 <<<"$out")" = 400 ] && grep -qF "$2" <<<"$out" || { echo "$out"; return 1; }
}
check "400: not JSON" bad '{"job": ' "invalid JSON"
check "400: job missing" bad '{"jobs": {}}' "jobs"
check "400: job.cores missing" bad '{"job": {"name": "x", "runtime": "1h"}}' "job.cores"
check "400: job.cores not a number" bad '{"job": {"name": "x", "cores": "many", "runtime": "1h"}}' "job.cores"
check "400: job.runtime malformed" bad '{"job": {"name": "x", "cores": 1, "runtime": "soon"}}' "job.runtime"
check "400: unknown dataset names the field" bad '{"job": {"name": "x", "cores": 1, "runtime": "1h", "datasets": ["gfs"]}}' "job.datasets[0]: unknown dataset 'gfs'"
check "400: submit without pods" bad '{"job": {"name": "x", "cores": 1, "runtime": "1h"}, "submit": {"pods": []}}' "submit.pods"

# ---- the ranking follows load, speed, data, maintenance
load a 3 # 24 of a's 32 cores
R=$(rank_job "$JOB")
check "load: a busy (24/32 cores), an idle cluster chosen, every score reported" has '
  .result.chosen != "a" and (.result.ranking | length) == 3 and
  (.result.ranking[] | select(.cluster == "a") | (.scores.load - 1/(1+24/32) | fabs) < 1e-9 and .rank == 3) and
  (.result.ranking[0].scores | keys == ["data", "load", "perf", "wait"])' "$R"

speed a 600; speed b 300; speed c 300
R=$(rank_job "$JOB")
check "node speed: a's cores twice as fast outweigh its load" has '
  .result.chosen == "a" and (.result.ranking[] | select(.cluster == "b") | (.scores.perf - 0.5 | fabs) < 1e-9)' "$R"

# the predicted wait: cluster a's own database (on the test's server), its learned waits fed by
# the labeler watching a (the same code as in production: labeler/waits_feed.c, waits_store.c)
R=$(rank_job "$JOB")
check "predicted wait: no database file for a yet, its wait is not predicted (logged, not fatal)" has '
  .result.chosen != null and (.result.ranking[] | select(.cluster == "a") | .wait_source != "predicted")' "$R"
DB_A=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/dam_waits_a")))' "$DATABASE_URL")
psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS dam_waits_a" -c "CREATE DATABASE dam_waits_a" >/dev/null 2>&1
mkdir -p "$DAM_TMP/spool"
"$BIN/tarema-labeler" serve --bind 127.0.0.1 --port 0 --spool "$DAM_TMP/spool" --no-publish --waits \
  --kubeconfig "$(dam_kubeconfig a)" --db "$DB_A" >"$DAM_TMP/labeler-a.log" 2>&1 &
LAB_PID=$!
wait_for 20 grep -q 'waits feed: database connected' "$DAM_TMP/labeler-a.log"
# the job's shape: one pod of 4 cores, no memory request
kc a apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: waiter, namespace: default}
spec:
  nodeName: a-1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "4"}}}]
EOF
fed_rows() { [ "$(psql "$DB_A" -Atc "SELECT count(*) FROM asa_waits WHERE pods = 1 AND cpu_milli = 4000 AND memory_bytes = 0" 2>/dev/null)" = 1 ]; }
check "the labeler on a learned the wait of the job's shape into a's database" wait_for 20 fed_rows
kill "$LAB_PID" 2>/dev/null
wait "$LAB_PID" 2>/dev/null
kc a delete pod waiter --grace-period=0 --force >/dev/null 2>&1
# the estimate as `tarema-planner waits` reads it from a's database
EST=$("$BIN/tarema-planner" waits --db "$DB_A" --json 2>/dev/null | jq '[.shapes[] | select(.pods == 1 and .cpu_milli == 4000)][0].estimate_s')
echo "$DB_A" >"$DAM_TMP/database-a"
R=$(rank_job "$JOB")
check "predicted wait: a's learned estimate for the job's shape ($EST s, as tarema-planner waits reads it) is its wait; b falls back" has '
  (.result.ranking[] | select(.cluster == "a") | .wait_source == "predicted" and .wait_s == '"${EST:-null}"' and (.scores.wait - 3600/(3600+'"${EST:-0}"') | fabs) < 1e-9) and
  (.result.ranking[] | select(.cluster == "b") | .wait_source != "predicted")' "$R"
rm -f "$DAM_TMP/database-a"

R=$(rank_job "$JOB_DATA")
check "data location: the dataset at b's storage (40Gi, 10Mi/s elsewhere) moves the job to b" has '
  .result.chosen == "b" and (.result.ranking[] | select(.cluster == "b") | .data_x == 0) and
  (.result.ranking[] | select(.cluster == "a") | .data_x > 1)' "$R"

NOW=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
kc b create configmap tarema-dam-maintenance --from-literal=windows="- {start: $(iso $((NOW - 600))), end: $(iso $((NOW + 1800))), reason: kernel}
- {start: $(iso $((NOW + 1200))), end: $(iso $((NOW + 7200))), reason: storage}" >/dev/null
R=$(rank_job "$JOB_DATA")
check "maintenance: b in a window now (two overlapping windows merged) is masked, a chosen" has '
  .result.chosen == "a" and (.result.excluded[] | select(.cluster == "b") | .kind == "maintenance" and .windows_merged == 1)' "$R"
kc b delete configmap tarema-dam-maintenance >/dev/null
kc b create configmap tarema-dam-maintenance --from-literal=windows="- {start: $(iso $((NOW + 1800))), end: $(iso $((NOW + 3600)))}" >/dev/null
R=$(rank_job "$JOB_DATA")
check "maintenance: a window starting before the job's expected end masks b too" has '
  .result.chosen == "a" and (.result.excluded[] | select(.cluster == "b") | .reason | test("before the job.s expected end"))' "$R"
kc b delete configmap tarema-dam-maintenance >/dev/null
kc b create configmap tarema-dam-maintenance --from-literal=windows="- {start: tomorrow}" >/dev/null
R=$(rank_job "$JOB_DATA")
check "maintenance: an unreadable ConfigMap excludes b, naming it (never placed blind)" has '
  (.result.excluded[] | select(.cluster == "b") | .kind == "unreachable" and (.reason | test("tarema-dam-maintenance")))' "$R"
kc b delete configmap tarema-dam-maintenance >/dev/null

# ---- an unreachable cluster: excluded and reported, the ranking still answers
TAREMA_CLUSTER_NAME=$DAM_PREFIX-c bash "$REPO_ROOT/hack/cluster.sh" kill apiserver >/dev/null 2>&1
R=$(rank_job "$JOB")
check "unreachable: c's API server down, c excluded with the reason, a chosen" has '
  .result.chosen == "a" and (.result.excluded[] | select(.cluster == "c") | .kind == "unreachable" and (.reason | length) > 0)' "$R"
check "metrics: c reported unreachable" bash -c "curl -sf '$DAM_HEALTH/metrics' | grep -q 'tarema_dam_cluster_reachable{cluster=\"c\"} 0'"
check "GET /api/v1/clusters reports c unreachable, a collected" bash -c "set -o pipefail; curl -sf --cacert '$DAM_TMP/tls.crt' -H 'Authorization: Bearer $DAM_TOKEN' '$DAM_URL/api/v1/clusters' | jq -e '(.clusters[] | select(.name == \"c\") | .unreachable | length > 0) and (.clusters[] | select(.name == \"a\") | .cores.used == 24)'"
TAREMA_CLUSTER_NAME=$DAM_PREFIX-c bash "$REPO_ROOT/hack/cluster.sh" start apiserver >/dev/null 2>&1
# a hung API server (SIGSTOP: the kernel still accepts, nothing answers) does not hold the ranking
APIPID=$(cat "$DAM_CACHE/clusters/$DAM_PREFIX-b/run/apiserver.pid")
kill -STOP "$APIPID"
T0=$(date +%s)
R=$(rank_job "$JOB")
T1=$(date +%s)
kill -CONT "$APIPID"
check "hung API server: b excluded after the 5 s timeout, the ranking answers in $((T1 - T0)) s" has "
  (.result.excluded[] | select(.cluster == \"b\") | .kind == \"unreachable\" and (.reason | test(\"no answer\"))) and
  .result.chosen != null and $((T1 - T0)) < 15" "$R"

# ---- restart keeps requests; an acknowledged request is never lost
ID_DONE=$(jq -r .id <<<"$R")
# b's API server hangs (SIGSTOP), so the worker is stuck collecting when the 202 comes back:
# the request is acknowledged and still PENDING when the service is killed with -9.
APIPID=$(cat "$DAM_CACHE/clusters/$DAM_PREFIX-b/run/apiserver.pid")
kill -STOP "$APIPID"
ID_NEW=$(post_job "$JOB")
sleep 0.5
STATE=$(psql "$DATABASE_URL" -Atc "SELECT state FROM dam_requests WHERE id = '$ID_NEW'")
dam_stop -KILL
kill -CONT "$APIPID"
check "kill -9 after the 202: the request is in PostgreSQL, still PENDING" test "$STATE" = PENDING
dam_start "$FED" --cluster-timeout-seconds 5 || fail "restart"
check "restart: the request ranked before is still DONE with its ranking" bash -c "
  source '$REPO_ROOT/tests/e2e/lib.sh'; $(declare -f api api_body); DAM_TMP='$DAM_TMP' DAM_TOKEN='$DAM_TOKEN' DAM_URL='$DAM_URL'
  set -o pipefail; api_body GET /api/v1/requests/$ID_DONE | jq -e '.state == \"DONE\" and .result.chosen == \"a\"'"
R=$(wait_state "$ID_NEW" '.state == "DONE"')
check "restart: the request acknowledged just before kill -9 is ranked after the restart" has '.result.chosen != null' "$R"

# ---- DELETE
check "DELETE forgets the request: 200, then GET 404, DELETE again 404" bash -c "
  $(declare -f api api_body); DAM_TMP='$DAM_TMP' DAM_TOKEN='$DAM_TOKEN' DAM_URL='$DAM_URL'
  [ \$(api DELETE /api/v1/requests/$ID_NEW | tail -n 1) = 200 ] &&
  [ \$(api GET /api/v1/requests/$ID_NEW | tail -n 1) = 404 ] &&
  [ \$(api DELETE /api/v1/requests/$ID_NEW | tail -n 1) = 404 ]"
check "GET of an id that never existed: 404" bash -c "
  $(declare -f api); DAM_TMP='$DAM_TMP' DAM_TOKEN='$DAM_TOKEN' DAM_URL='$DAM_URL'
  [ \$(api GET /api/v1/requests/nope | tail -n 1) = 404 ]"

unload a
for c in a b c; do kc "$c" annotate nodes --all tarema.io/profile- >/dev/null 2>&1; done
summary
