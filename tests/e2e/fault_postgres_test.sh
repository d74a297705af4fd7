#!/usr/bin/env bash
# Fault test: the weblog under PostgreSQL faults (issue 13, defects 4 and 6). Events are posted
# continuously while PostgreSQL is (1) hung: every server process SIGSTOPped, (2) blocked: a
# table lock held by another session, (3) killed: SIGKILL of every server process, then started
# again, and (4) walstall: the same kill -9 after the labeler stored 20 events while the WAL
# writer, background writer and checkpointer were stopped, which loses every commit that was
# not synchronous (deterministic: before the labeler's sessions set synchronous_commit=on, all
# 20 were lost, and the killed phase lost 2 to 8 events in each of 4 runs).
# Each POST must be answered fast (202 once spooled; before the fix each one waited for the
# database: 15-19 s): p99 under MAX_POST_MS, and none over 2 s (the spool's fdatasync on a disk
# shared with other work is the only wait left; it has been seen at 1.2 s on a busy host), /readyz stays 200 while /readyz/database says what is wrong, and after
# the fault every acknowledged event is stored exactly once. Then the refusals: events the store
# would reject get 400 naming the field even while the database is down, and an event that can
# only be judged on replay (a run unknown while the database was never reached) lands in the
# dead-letter spool with tarema_weblog_dead_letters_total and a log line, not silently dropped.
# Prints per fault: posted, acknowledged, lost, double-stored, max POST ms, recovery seconds.
# Needs a running instance of hack/postgres.sh (TAREMA_PG_NAME); loopback only; about 60 s.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): stops the shared PostgreSQL
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1
eval "$(bash hack/postgres.sh env)"

FAULT_S=${FAULT_S:-5}     # how long each fault lasts
# p99. 500 ms, not 200: a POST is answered once spooled, after an fdatasync on a disk this
# 2-core host shares with etcd and PostgreSQL (itself recovering in these faults); that one sync
# has been seen at 1.2 s on a busy host (above), so 200 ms leaves the 1 % tail no room under CI
# load. The regression it guards against (each POST waiting for the database, 15-19 s) stays
# far above 500 ms.
MAX_POST_MS=${MAX_POST_MS:-500}
work=$(mktemp -d)
wf=e2e-fault-pg-$$
run_id=fault-pg-run-$$
pids=()
stopped=()
cleanup() {
  local p
  for p in "${stopped[@]}"; do kill -CONT "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  bash hack/postgres.sh status >/dev/null 2>&1 || bash hack/postgres.sh start >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$wf'; DELETE FROM weblog_runs WHERE run_id LIKE 'fault-pg-%$$'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
start_labeler() { # SPOOL_DIR LOG
  # shellcheck disable=SC2086 # LABELER_FLAGS: words (empty to run a build without the flag)
  "$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$port" --spool "$1" --no-publish \
    ${LABELER_FLAGS---db-timeout-seconds 2} >"$2" 2>&1 &
  lab_pid=$!
  pids+=("$lab_pid")
  wait_for 20 curl -sf "$url/readyz"
}
post() { # BODY -> "code seconds"
  curl -s -o "$work/resp" -w '%{http_code} %{time_total}\n' --max-time 30 -X POST \
    -H 'Content-Type: application/json' --data "$1" "$url/weblog"
}
event() { # TASK_ID
  echo '{"runName":"fault_run","runId":"'$run_id'","event":"process_completed","utcTime":"2023-05-01T12:10:00Z","trace":{"task_id":'$1',"hash":"fa/'$(printf %07d "$1")'","name":"FAULT:P'$(($1 % 3))' (s'$1')","status":"COMPLETED","exit":0,"cpus":2,"realtime":1000,"%cpu":150.0,"peak_rss":1048576}}'
}
# poster FIRST SECONDS OUT: posts events FIRST, FIRST+1, ... until SECONDS passed; one line
# "id code seconds" per event into OUT.
poster() {
  local id=$1 end=$((SECONDS + $2))
  while [ $SECONDS -lt $end ]; do
    echo "$id $(post "$(event "$id")")" >>"$3"
    id=$((id + 1))
  done
}
stored() { psql "$DATABASE_URL" -Atc "SELECT count(*), count(DISTINCT task_key) FROM task_runs WHERE workflow = '$wf'" 2>/dev/null; }
pending() { curl -sf "$url/metrics" | awk '$1 == "tarema_labeler_spool_pending" {print $2}'; }
pg_pids() { # the postmaster and its children
  local pm
  pm=$(bash hack/postgres.sh status 2>/dev/null | sed -n 's/.*running (pid \([0-9]*\)).*/\1/p')
  [ -n "$pm" ] && echo "$pm" $(ps -o pid= --ppid "$pm")
}

check "PostgreSQL answers" bash hack/postgres.sh status
if start_labeler "$work/spool" "$work/serve.log"; then pass "labeler starts"; else fail "labeler starts" "$(tail -5 "$work/serve.log")"; fi
read -r code _ < <(post '{"runName":"fault_run","runId":"'$run_id'","event":"started","utcTime":"2023-05-01T12:00:00Z","metadata":{"workflow":{"projectName":"'$wf'"}}}')
[ "$code" = 202 ] && pass "started event acknowledged" || fail "started event acknowledged" "code $code $(cat "$work/resp")"

total_acked=0
next_id=1
summary_rows=()
# run_fault NAME INJECT RELEASE: posts from two clients during the fault, releases it, waits
# until everything acknowledged is stored; checks latency, readiness, loss, duplicates.
run_fault() {
  local name=$1 inject=$2 release=$3 out=$work/$1.posts
  : >"$out"
  $inject
  sleep 0.5 # the fault is in place before the load starts
  poster "$next_id" "$FAULT_S" "$out" &
  local p1=$!
  poster $((next_id + 100000)) "$FAULT_S" "$out" &
  local p2=$!
  sleep 1.5
  local ready db
  ready=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url/readyz")
  # Polled for up to 3 s (the fault lasts until the posters end, FAULT_S after the load began):
  # one read at inject + 2 s could come before the labeler's store had noticed the fault, on a
  # loaded host. A store that never reports it still fails the check below.
  db_reports_fault() { db=$(curl -s --max-time 5 "$url/readyz/database"); [[ $db == *"database "* && $db != ok* ]]; }
  wait_for 3 db_reports_fault || true
  wait "$p1" "$p2"
  local t0=$SECONDS
  $release
  next_id=$((next_id + 200000))
  local posted acked max_ms p99_ms
  posted=$(wc -l <"$out")
  acked=$(awk '$2 == 202' "$out" | wc -l)
  max_ms=$(awk '{ms = $3 * 1000; if (ms > m) m = ms} END {printf "%d", m}' "$out")
  p99_ms=$(awk '{print $3 * 1000}' "$out" | sort -n | awk '{a[NR] = $1} END {i = int(NR * 0.99); if (i < 1) i = 1; printf "%d", a[i]}')
  total_acked=$((total_acked + acked))
  [ "$ready" = 200 ] && pass "$name: /readyz stays 200 (events are accepted)" || fail "$name: /readyz" "code $ready"
  [[ $db == *"database "* && $db != ok* ]] && pass "$name: /readyz/database reports it: ${db%%;*}" || fail "$name: /readyz/database" "$db"
  [ "$posted" -gt 0 ] && [ "$acked" = "$posted" ] && pass "$name: all $posted POSTs acknowledged (202)" ||
    fail "$name: POSTs acknowledged" "$acked of $posted; codes: $(awk '{print $2}' "$out" | sort | uniq -c | tr '\n' ' ')"
  [ "$p99_ms" -lt "$MAX_POST_MS" ] && [ "$max_ms" -lt 2000 ] && pass "$name: POST p99 $p99_ms ms < $MAX_POST_MS ms, slowest $max_ms ms < 2 s" ||
    fail "$name: POST latency" "p99 $p99_ms ms, slowest $max_ms ms"
  all_stored() { [ "$(stored)" = "$total_acked|$total_acked" ] && [ "$(pending)" = 0 ]; }
  local rec=-1
  if wait_for 60 all_stored; then rec=$((SECONDS - t0)); pass "$name: every acknowledged event stored exactly once ($total_acked) ${rec} s after the fault ended"; else fail "$name: stored after the fault" "stored|distinct $(stored), acknowledged $total_acked, pending $(pending)"; fi
  local s d
  IFS='|' read -r s d <<<"$(stored)"
  summary_rows+=("$(printf '%-7s posted %4d  acknowledged %4d  lost %d  double-stored %d  POST p99 %3d ms max %4d ms  recovery %s s' \
    "$name" "$posted" "$acked" $((total_acked - ${d:-0})) $((${s:-0} - ${d:-0})) "$p99_ms" "$max_ms" "$rec")")
}

hang() { local p; for p in $(pg_pids); do kill -STOP "$p" && stopped+=("$p"); done; }
unhang() { local p; for p in "${stopped[@]}"; do kill -CONT "$p"; done; stopped=(); }
run_fault hung hang unhang

lock_pid=
lock() {
  psql "$DATABASE_URL" -qc "BEGIN; LOCK TABLE task_runs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep($FAULT_S + 1); COMMIT;" >/dev/null 2>&1 &
  lock_pid=$!
}
unlock() { wait "$lock_pid"; }
run_fault locked lock unlock

# Every server process at once, as when its container or machine dies. (SIGKILL of the
# postmaster alone leaves backends running that still commit for a moment, into WAL the
# restarted server's recovery has already read: PostgreSQL itself loses those.)
crash() { kill -KILL $(pg_pids); }
restart() { bash hack/postgres.sh start >"$work/pg-start.log" 2>&1 || cat "$work/pg-start.log"; }
run_fault killed crash restart

# Deterministic version of the killed phase: the labeler forgets an event once its COMMIT
# returns, so that COMMIT must have put the WAL out of the server's memory (its sessions run
# with synchronous_commit=on; this server's default is off). With the WAL writer, background
# writer and checkpointer stopped nothing else writes the WAL out: an asynchronous commit stays
# in shared memory and a kill -9 of every server process loses it, every time.
stalled_pids() {
  local pm
  pm=$(bash hack/postgres.sh status 2>/dev/null | sed -n 's/.*running (pid \([0-9]*\)).*/\1/p')
  [ -n "$pm" ] && ps -o pid=,args= --ppid "$pm" | awk '/walwriter|background writer|checkpointer/ {print $1}'
}
for p in $(stalled_pids); do kill -STOP "$p" && stopped+=("$p"); done
[ "${#stopped[@]}" = 3 ] && pass "WAL writer, background writer and checkpointer stopped" || fail "writers stopped" "${stopped[*]}"
# Counted from what is stored now, so that a loss in the phases above does not count here.
IFS='|' read -r s0 d0 <<<"$(stored)"
wal_acked=0
for id in $(seq "$next_id" $((next_id + 19))); do
  read -r code _ < <(post "$(event "$id")")
  [ "$code" = 202 ] && wal_acked=$((wal_acked + 1))
done
next_id=$((next_id + 200000))
total_acked=$((total_acked + wal_acked))
want="$((s0 + wal_acked))|$((d0 + wal_acked))"
stored_all() { [ "$(stored)" = "$want" ] && [ "$(pending)" = 0 ]; }
if wait_for 30 stored_all; then pass "walstall: $wal_acked of 20 events acknowledged and stored (the spool forgot them)"; else fail "walstall: stored before the crash" "stored|distinct $(stored), want $want, pending $(pending)"; fi
old_pids=$(pg_pids)
crash
stopped=()
gone() { local p; for p in $old_pids; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_for 10 gone || fail "walstall: PostgreSQL gone after kill -9" "$old_pids"
restart
if wait_for 30 stored_all; then pass "walstall: all $wal_acked still stored after kill -9 (the labeler's commits were synchronous)"; else fail "walstall: stored after kill -9 with the WAL writer stopped" "stored|distinct $(stored), want $want, pending $(pending)"; fi
IFS='|' read -r s d <<<"$(stored)"
summary_rows+=("$(printf '%-7s posted %4d  acknowledged %4d  lost %d  (WAL writer stopped, then kill -9)' walstall 20 "$wal_acked" $((d0 + wal_acked - ${d:-0})))")

# Refused before acknowledging, while the database is down.
bash hack/postgres.sh stop >/dev/null 2>&1
bad_cpus=$(event 900001 | sed 's/"cpus":2/"cpus":3000000000/')
read -r code _ < <(post "$bad_cpus")
[ "$code" = 400 ] && grep -q 'trace.cpus' "$work/resp" && pass "cpus 3000000000 refused with 400 naming trace.cpus (database down)" || fail "absurd cpus refused" "code $code $(cat "$work/resp")"
unknown=$(event 900002 | sed "s/\"runId\":\"$run_id\"/\"runId\":\"fault-pg-unknown-$$\"/")
read -r code _ < <(post "$unknown")
[ "$code" = 400 ] && grep -q 'runId: run fault-pg-unknown' "$work/resp" && pass "task of an unknown run refused with 400 naming runId (database down)" || fail "unknown run refused" "code $code $(cat "$work/resp")"
bad_time=$(event 900003 | sed 's/"realtime":1000/"realtime":1000,"submit":99999999999999999/')
read -r code _ < <(post "$bad_time")
[ "$code" = 400 ] && grep -q 'trace.submit' "$work/resp" && pass "submit time past the year 9999 refused with 400 naming trace.submit" || fail "absurd time refused" "code $code $(cat "$work/resp")"

# A labeler that never reached the database cannot know the run: it accepts, and the replay
# keeps the refused event as a dead letter.
kill "$lab_pid" 2>/dev/null; wait "$lab_pid" 2>/dev/null
start_labeler "$work/spool2" "$work/serve2.log" || fail "second labeler starts" "$(tail -3 "$work/serve2.log")"
read -r code _ < <(post "$unknown")
[ "$code" = 202 ] && pass "unknown run accepted while the database was never reached (cannot be judged yet)" || fail "unknown run accepted when undecidable" "code $code"
bash hack/postgres.sh start >/dev/null 2>&1
dead() { curl -sf "$url/metrics" | awk '$1 == "tarema_weblog_dead_letters_total" {print $2}'; }
dead_is_1() { [ "$(dead)" = 1 ]; }
if wait_for 30 dead_is_1; then pass "replay refused it: tarema_weblog_dead_letters_total 1"; else fail "dead letter counted" "$(dead)"; fi
grep -q 'fault-pg-unknown' "$work/spool2/dead-letter/events.log" 2>/dev/null && grep -q '"error":' "$work/spool2/dead-letter/events.log" &&
  pass "the event is kept in <spool>/dead-letter with the reason" || fail "dead-letter file" "$(ls -R "$work/spool2" 2>&1 | head)"
grep -q 'dead-letter spool' "$work/serve2.log" && pass "a log line says so" || fail "dead-letter log line" "$(tail -3 "$work/serve2.log")"
[ "$(pending)" = 0 ] && pass "the main spool is empty afterwards" || fail "main spool empty" "$(pending)"

echo "# fault figures (PostgreSQL, weblog; fault ${FAULT_S} s, two posting clients):"
for r in "${summary_rows[@]}"; do echo "#   $r"; done
summary
