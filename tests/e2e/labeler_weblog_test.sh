#!/usr/bin/env bash
# labeler_weblog_test.sh: Nextflow weblog events POSTed to `tarema-labeler serve` end up as
# TaskProfiles on the control plane, with labels computed by hand below; duplicates are
# stored once; new runs refresh the labels; health and metrics endpoints answer.
# Needs KUBECONFIG and DATABASE_URL (tests/run.sh e2e provides both).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

work=$(mktemp -d)
ns=lab-weblog-$$
wf=e2e-weblog-$$
run_id=run-$$-$RANDOM
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$wf'; DELETE FROM weblog_runs WHERE run_id = '$run_id'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port

check "CRD applies" apply_shared -f manifests/crds/taskprofile.yaml
check "CRD established" kubectl wait --for=condition=Established --timeout=30s crd/taskprofiles.tarema.io
kubectl create namespace "$ns" >/dev/null

"$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$port" --spool "$work/spool" \
  --namespace "$ns" --groups tests/fixtures/labeler/groups_3.json --resync-seconds 3 \
  >"$work/serve.log" 2>&1 &
pid=$!
if wait_for 20 curl -sf "$url/readyz"; then pass "serve becomes ready"; else fail "serve becomes ready" "$(tail -5 "$work/serve.log")"; fi
check "healthz answers" curl -sf "$url/healthz"

post() { # BODY -> prints the HTTP status
  curl -s -o "$work/resp" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data "$1" "$url/weblog/e2e"
}
started='{"runName":"e2e_run","runId":"'$run_id'","event":"started","utcTime":"2023-05-01T12:00:00Z","metadata":{"workflow":{"projectName":"'$wf'","manifest":{"name":"'$wf'"}}}}'
completed() { # N PROCESS CPU
  echo '{"runName":"e2e_run","runId":"'$run_id'","event":"process_completed","utcTime":"2023-05-01T12:10:00Z","trace":{"task_id":'$1',"hash":"e2/'$(printf %06d "$1")'","name":"E2E:'$2' (s'$1')","process":"E2E:'$2'","status":"COMPLETED","exit":0,"attempt":1,"cpus":2,"memory":4294967296,"realtime":'$(( $1 * 1000 ))',"%cpu":'$3',"peak_rss":'$(( $1 * 1048576 ))',"rchar":'$(( $1 * 1000 ))',"wchar":0,"submit":1682942400000,"start":1682942401000,"complete":1682942500000}}'
}

[ "$(post "$started")" = 202 ] && pass "started event spooled and acknowledged (202)" || fail "started event acknowledged" "$(cat "$work/resp")"
codes=""
# Hand-computed labels (groups_3.json: cpu classes of 20, 20, 40 cores, p = 0.25, 0.5):
# samples 100..600 -> h = 1.25 -> 225 and h = 2.5 -> 350.
# ALIGN (100, 300) mean 200 -> 1; SORT (200, 400) mean 300 -> 2; CALL (500, 600) 550 -> 3.
i=0
bodies=()
for spec in ALIGN:100 ALIGN:300 SORT:200 SORT:400 CALL:500 CALL:600; do
  i=$((i + 1))
  bodies+=("$(completed $i "${spec%%:*}" "${spec##*:}.0")")
  codes+="$(post "${bodies[-1]}") "
done
[ "$codes" = "202 202 202 202 202 202 " ] && pass "process_completed events acknowledged (202)" || fail "process_completed events acknowledged" "codes: $codes"
drained() { local m; m=$(curl -sf "$url/metrics") && grep -q '^tarema_labeler_spool_pending 0' <<<"$m"; }

tp_label() { # PROCESS FEATURE
  kubectl -n "$ns" get taskprofiles -o jsonpath="{.items[?(@.spec.process==\"E2E:$1\")].status.labels.$2}"
}
labels_are() { [ "$(tp_label ALIGN cpu)$(tp_label SORT cpu)$(tp_label CALL cpu)" = "$1" ]; }
if wait_for 30 labels_are 123; then pass "TaskProfiles appear with cpu labels 1, 2, 3"; else
  fail "TaskProfiles appear with cpu labels 1, 2, 3" "got '$(tp_label ALIGN cpu)' '$(tp_label SORT cpu)' '$(tp_label CALL cpu)'; $(kubectl -n "$ns" get taskprofiles 2>&1 | head -5)"; fi
name=$(kubectl -n "$ns" get taskprofiles -o jsonpath='{.items[?(@.spec.process=="E2E:SORT")].metadata.name}')
[[ $name =~ ^e2e-weblog-[0-9]+-e2e-sort-[0-9a-f]{8}$ ]] && pass "TaskProfile name is sanitised with a hash suffix" || fail "TaskProfile name" "$name"
runs=$(kubectl -n "$ns" get taskprofile "$name" -o jsonpath='{.status.runs} {.status.mean.realtimeMs} {.status.groups.cpu.n} {.spec.workflow}')
[ "$runs" = "2 3500 3 $wf" ] && pass "TaskProfile status has runs, mean realtime, groups" || fail "TaskProfile status" "$runs"

# Replayed events (Nextflow retries, or a second labeler) are stored once.
for b in "${bodies[@]}"; do post "$b" >/dev/null; done
wait_for 20 drained || fail "spool drained after the replays" "$(curl -sf "$url/metrics" | grep spool_pending)"
n=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM task_runs WHERE workflow = '$wf'")
[ "$n" = 6 ] && pass "re-posted events are not duplicated" || fail "re-posted events are not duplicated" "rows: $n"

# A new, heavy ALIGN run: samples 100..600, 1000 -> bounds 250, 400; ALIGN mean 467 -> 3.
post "$(completed 7 ALIGN 1000.0)" >/dev/null
if wait_for 30 labels_are 323; then pass "labels refresh when new runs arrive"; else fail "labels refresh when new runs arrive" "got $(tp_label ALIGN cpu) $(tp_label SORT cpu) $(tp_label CALL cpu)"; fi

[ "$(post '{"event":"process_completed","runName":"x","runId":"y","trace":{"task_id":1,"name":"P (1)","peak_rss":"lots"}}')" = 400 ] &&
  grep -q 'trace.peak_rss' "$work/resp" && pass "malformed event gets 400 naming the field" || fail "malformed event gets 400" "$(cat "$work/resp")"
[ "$(post '{"event":"process_completed","runName":"x","runId":"never-started","trace":{"task_id":1,"name":"P (1)"}}')" = 400 ] &&
  grep -q 'runId: run never-started' "$work/resp" &&
  pass "event of an unknown run is refused before acknowledging (400 naming runId)" || fail "unknown run refused" "$(cat "$work/resp")"
[ "$(post '{"event":"process_started","runName":"e2e_run","runId":"'$run_id'","trace":{}}')" = 200 ] && pass "other events are accepted and ignored" || fail "other events ignored" "$(cat "$work/resp")"

# Bodies that are not events: each gets a clear 4xx, and the server keeps serving.
head -c 10485760 /dev/zero | tr '\0' 'x' >"$work/big"
code=$(curl -s -o "$work/resp" -w '%{http_code}' -X POST --data-binary @"$work/big" "$url/weblog")
[ "$code" = 413 ] && pass "a 10 MB body gets 413" || fail "10 MB body" "code $code"
head -c 4096 /dev/urandom >"$work/garbage"
code=$(curl -s -o "$work/resp" -w '%{http_code}' -X POST --data-binary @"$work/garbage" "$url/weblog")
[ "$code" = 400 ] && pass "binary garbage gets 400" || fail "binary garbage" "code $code $(head -c 200 "$work/resp")"
[ "$(post '{"event":"process_completed","runName":"x","runId":"y","trace":{"task_id":1,"name":"P (1)","status":7}}')" = 400 ] &&
  grep -q 'trace.status must be a string' "$work/resp" && pass "wrong JSON type gets 400 naming the field" || fail "wrong JSON type" "$(cat "$work/resp")"
check "still healthy" curl -sf "$url/healthz"

# The resync safety net (--resync-seconds 3) republishes a TaskProfile deleted by hand.
kubectl -n "$ns" delete taskprofile "$name" >/dev/null
back() { [ "$(kubectl -n "$ns" get taskprofile "$name" -o jsonpath='{.status.labels.cpu}' 2>/dev/null)" = 2 ]; }
if wait_for 20 back; then pass "a deleted TaskProfile comes back at the resync"; else fail "deleted TaskProfile republished" "$(tail -3 "$work/serve.log")"; fi

wait_for 20 drained
metrics=$(curl -sf "$url/metrics")
echo "$metrics" | qgrep 'tarema_labeler_weblog_events_total{event="process_completed",result="stored"} 13' &&
  pass "metrics count stored events" || fail "metrics count stored events" "$(echo "$metrics" | grep weblog_events)"
# Invented event names must not grow the metric series without bound.
for i in 1 2 3; do post '{"event":"made-up-'$i'-'$RANDOM'","runName":"x","runId":"y"}' >/dev/null; done
metrics=$(curl -sf "$url/metrics")
echo "$metrics" | qgrep 'tarema_labeler_weblog_events_total{event="other",result="ignored"} 3' &&
  ! echo "$metrics" | qgrep 'made-up' && pass "unknown event names share one metric series" ||
  fail "unknown event names share one series" "$(echo "$metrics" | grep weblog_events)"
echo "$metrics" | qgrep '^tarema_labeler_database_up 1' && pass "metrics report the database up" || fail "database_up metric" "$(echo "$metrics" | grep database_up)"
summary
