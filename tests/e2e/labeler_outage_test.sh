#!/usr/bin/env bash
# labeler_outage_test.sh: PostgreSQL stops while weblog events arrive, the labeler is killed
# (SIGKILL) with events in its spool and restarted, then PostgreSQL starts again: every
# acknowledged event is stored exactly once. Uses hack/postgres.sh stop|start on the instance
# named by TAREMA_PG_NAME (the one DATABASE_URL points at).
# e2e-run: alone (tests/run.sh runs it with no other test beside it): stops the shared PostgreSQL
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

work=$(mktemp -d)
wf=e2e-outage-$$
run_id=outage-$$-$RANDOM
pid=
pg_started=1
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "$pg_started" = 1 ] || bash hack/postgres.sh start >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$wf'; DELETE FROM weblog_runs WHERE run_id = '$run_id'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
start_labeler() {
  "$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$port" --spool "$work/spool" \
    --groups tests/fixtures/labeler/groups_3.json --no-publish >>"$work/serve.log" 2>&1 &
  pid=$!
  wait_for 20 curl -sf "$url/readyz"
}
post() {
  curl -s -o /dev/null -w '%{http_code}' -X POST --data "$1" "$url/weblog"
}
event() { # N
  echo '{"runName":"outage_run","runId":"'$run_id'","event":"process_completed","utcTime":"2023-05-01T12:10:00Z","trace":{"task_id":'$1',"hash":"0e/'$(printf %06d "$1")'","name":"OUTAGE:P'$(( $1 % 3 ))' (s'$1')","status":"COMPLETED","exit":0,"realtime":1000,"%cpu":'$(( 100 + $1 ))'.0,"peak_rss":1048576,"rchar":10,"wchar":10}}'
}
acked=0
bad=""
post_range() { # FROM TO: posts events FROM..TO, counts acknowledgements (200/202)
  local i code
  for ((i = $1; i <= $2; i++)); do
    code=$(post "$(event "$i")")
    if [ "$code" = 200 ] || [ "$code" = 202 ]; then acked=$((acked + 1)); else bad+="$i:$code "; fi
  done
}
count() { psql "$DATABASE_URL" -Atc "SELECT count(*) || ' ' || count(DISTINCT task_key) FROM task_runs WHERE workflow = '$wf'" 2>/dev/null; }

if start_labeler; then pass "labeler starts"; else fail "labeler starts" "$(tail -5 "$work/serve.log")"; fi
[ "$(post '{"runName":"outage_run","runId":"'$run_id'","event":"started","utcTime":"2023-05-01T12:00:00Z","metadata":{"workflow":{"projectName":"'$wf'"}}}')" = 202 ] &&
  pass "started event acknowledged" || fail "started event acknowledged"

post_range 1 20
# Stop PostgreSQL while events keep coming.
pg_started=0
bash hack/postgres.sh stop >"$work/pg-stop.log" 2>&1 &
stopper=$!
post_range 21 60
wait "$stopper" && pass "PostgreSQL stopped" || fail "PostgreSQL stopped" "$(cat "$work/pg-stop.log")"
post_range 61 80
pending=$(curl -sf "$url/metrics" | awk '/^tarema_labeler_spool_pending/ {print $2}')
[ "${pending:-0}" -gt 0 ] && pass "events are spooled while the database is down ($pending)" || fail "events spooled" "pending=$pending"

# Crash with events in the spool, come back, take more events.
kill -9 "$pid"; wait "$pid" 2>/dev/null
if start_labeler; then pass "labeler restarts after SIGKILL with a full spool"; else fail "labeler restarts" "$(tail -5 "$work/serve.log")"; fi
post_range 81 100

if bash hack/postgres.sh start >"$work/pg-start.log" 2>&1; then pg_started=1; pass "PostgreSQL started again"; else fail "PostgreSQL started again" "$(cat "$work/pg-start.log")"; fi
[ -z "$bad" ] && pass "all 100 events acknowledged (200/202)" || fail "events acknowledged" "not acknowledged: $bad"
stored_all() { [ "$(count)" = "$acked $acked" ]; }
if wait_for 60 stored_all; then pass "every acknowledged event stored exactly once ($acked)"; else fail "every event stored exactly once" "stored/distinct: $(count), acknowledged: $acked"; fi
drained() { local m; m=$(curl -sf "$url/metrics") && grep -q '^tarema_labeler_spool_pending 0' <<<"$m"; } # no SIGPIPE under pipefail
wait_for 20 drained && pass "spool drained" || fail "spool drained" "$(curl -sf "$url/metrics" | grep spool_pending)"
post_range 101 105
if wait_for 20 stored_all; then pass "events after recovery are stored directly"; else fail "events after recovery" "$(count) vs $acked"; fi
summary
