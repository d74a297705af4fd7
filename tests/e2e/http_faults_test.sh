#!/usr/bin/env bash
# tests/e2e/http_faults_test.sh: hostile clients against both HTTP servers (tarema-scheduler's
# extender port, tarema-labeler's weblog port), on loopback, a few seconds each
# (tests/e2e/http_attack.py): 500 slowloris connections, 64 unfinished large bodies, 32
# concurrent multi-MB JSON bodies of ~12-byte keys. Health must be answered in every probe (on
# the health port the chart's probes use) and the peak RSS stay bounded by the memory budget
# (64 MiB) plus a margin. Each attack prints its figures.
#
# Before the fix (same loads, /healthz probed on the only port): slowloris 3 of 36 probes
# answered (all 256 slots held); bodies 514 MB peak RSS; JSON 1,598 MB (scheduler) and
# 706 MB (labeler, 1.9 MB bodies).
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

WORK=$(mktemp -d)
LAB_PID=
cleanup() {
  stop_schedulers
  [ -n "$LAB_PID" ] && kill "$LAB_PID" 2>/dev/null && wait "$LAB_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
TLS=$REPO_ROOT/tests/fixtures/tls
TOKEN=$(cat "$TLS/token")
ATTACK=$REPO_ROOT/tests/e2e/http_attack.py
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fig() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" ${1#figures: }"; }

# attack NAME KIND PORT HEALTH_PORT PID PATH MAX_RSS_MB [ARGS...]: runs one attack and checks
# that every probe was answered and the peak RSS stayed under MAX_RSS_MB.
attack() {
  local name=$1 kind=$2 port=$3 hport=$4 pid=$5 path=$6 max=$7
  shift 7
  local out
  out=$(timeout 120 python3 "$ATTACK" "$kind" --port "$port" --probe-port "$hport" --pid "$pid" \
    --path "$path" --token "$TOKEN" "$@" | grep '^figures:')
  echo "    $name $out"
  local probes answered peak
  probes=$(fig "$out" probes)
  answered=$(fig "$out" answered)
  peak=$(fig "$out" peak_rss_mb)
  if [ -n "$probes" ] && [ "$probes" -gt 0 ] && [ "$answered" = "$probes" ]; then
    pass "$name: /healthz answered in every probe ($answered/$probes)"
  else
    fail "$name: /healthz answered in every probe" "$out"
  fi
  if [ -n "$peak" ] && [ "$peak" -le "$max" ]; then
    pass "$name: peak RSS ${peak} MB <= $max MB"
  else
    fail "$name: peak RSS bounded (<= $max MB)" "$out"
  fi
  LAST_FIGURES=$out
}

# ---------------------------------------------------------------- tarema-scheduler
SHP=$(free_port)
if ! start_scheduler "$WORK/sched.log" --mode extender --scheduler-name "faults-$SCHED_E2E_ID" \
  --health-port "$SHP" --auth-token-file "$TLS/token"; then
  fail "tarema-scheduler starts with a health port and a token" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
SP=$SCHED_PORT
attack "scheduler slowloris" slowloris "$SP" "$SHP" "$SCHED_PID" /filter 100 --conns 500 --secs 8
held=$(fig "$LAST_FIGURES" held)
[ "$held" -le 64 ] && pass "scheduler slowloris: one address holds at most 64 connections ($held)" ||
  fail "scheduler slowloris: per-address connection limit" "$LAST_FIGURES"
# The main port keeps answering other addresses too (1024 slots, 64 per address).
out=$(timeout 60 python3 "$ATTACK" slowloris --port "$SP" --probe-port "$SP" --pid "$SCHED_PID" --conns 500 --secs 4 | grep '^figures:')
echo "    scheduler slowloris, probes on the main port: $out"
[ "$(fig "$out" answered)" = "$(fig "$out" probes)" ] && pass "scheduler slowloris: the main port answers other addresses" ||
  fail "scheduler slowloris: the main port answers other addresses" "$out"
attack "scheduler body flood" bodies "$SP" "$SHP" "$SCHED_PID" /filter 160 --conns 64 --mb 8 --secs 5
attack "scheduler JSON flood" json "$SP" "$SHP" "$SCHED_PID" /filter 200 --conns 32 --mb 5
# Still serving normally afterwards, with authentication.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
  -d '{"Pod": {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}}, "NodeNames": []}' \
  "http://127.0.0.1:$SP/filter")
[ "$code" = 200 ] && pass "scheduler answers /filter after the attacks (200)" || fail "scheduler answers /filter after the attacks" "status $code"

# ---------------------------------------------------------------- tarema-labeler
LP=$(free_port)
LHP=$(free_port)
PGHOST=/nonexistent PGCONNECT_TIMEOUT=1 "$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$LP" \
  --health-port "$LHP" --auth-token-file "$TLS/token" --spool "$WORK/spool" --no-publish \
  --groups "$REPO_ROOT/tests/fixtures/labeler/groups_3.json" >"$WORK/lab.log" 2>&1 &
LAB_PID=$!
if wait_for 20 curl -sf "http://127.0.0.1:$LHP/healthz"; then
  pass "tarema-labeler serve starts with a health port and a token"
else
  fail "tarema-labeler serve starts" "$(tail -n 5 "$WORK/lab.log")"
  summary
  exit 1
fi
attack "labeler slowloris" slowloris "$LP" "$LHP" "$LAB_PID" /weblog 100 --conns 500 --secs 6
attack "labeler body flood" bodies "$LP" "$LHP" "$LAB_PID" /weblog 120 --conns 64 --mb 1.9 --secs 5
attack "labeler JSON flood" json "$LP" "$LHP" "$LAB_PID" /weblog 160 --conns 32 --mb 1.9
summary
