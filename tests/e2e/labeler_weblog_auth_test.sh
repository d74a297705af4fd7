#!/usr/bin/env bash
# tests/e2e/labeler_weblog_auth_test.sh: the weblog over HTTPS with the shared token (issue 13,
# defect 5: it was plain HTTP and took events from anyone). tarema-labeler serve with the test
# PKI and token: an event without credentials, or with a wrong token, is refused 401 (before
# the fix: acknowledged); what Nextflow can send is accepted: HTTP Basic with the token as
# password (nf-weblog's weblog.basicToken), ?token= in the URL (older Nextflow), and a Bearer
# header (other clients), as is a client certificate of the CA. Health stays open on both
# ports; the weblog refuses a non-loopback address without authentication.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

WORK=$(mktemp -d)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
TLS=$REPO_ROOT/tests/fixtures/tls
TOKEN=$(cat "$TLS/token")
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
HPORT=$(free_port)
# No database: acknowledged events are spooled (202), which is all this test needs.
PGHOST=/nonexistent PGCONNECT_TIMEOUT=1 "$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$PORT" \
  --health-port "$HPORT" --spool "$WORK/spool" --no-publish \
  --groups "$REPO_ROOT/tests/fixtures/labeler/groups_3.json" \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" --client-ca-file "$TLS/ca.crt" \
  --auth-token-file "$TLS/token" >"$WORK/serve.log" 2>&1 &
PID=$!
if wait_for 20 curl -sf "http://127.0.0.1:$HPORT/healthz"; then
  pass "labeler serves with TLS, client CA and token"
else
  fail "labeler serves with TLS, client CA and token" "$(tail -n 5 "$WORK/serve.log")"
  summary
  exit 1
fi
URL=https://127.0.0.1:$PORT/weblog
EVENT='{"runName":"auth_run","runId":"auth-'$$'","event":"started","utcTime":"2023-05-01T12:00:00Z","metadata":{"workflow":{"projectName":"e2e-auth"}}}'
post() { curl -s -o "$WORK/resp" -w '%{http_code}' --cacert "$TLS/ca.crt" -X POST -H 'Content-Type: application/json' --data "$EVENT" "$@"; }
acked() { [ "$1" = 200 ] || [ "$1" = 202 ]; }

code=$(post "$URL")
[ "$code" = 401 ] && pass "event without credentials: 401" || fail "event without credentials: 401" "status $code: $(cat "$WORK/resp")"
code=$(post -u "tarema:wrong-token-wrong-token" "$URL")
[ "$code" = 401 ] && pass "event with a wrong Basic password: 401" || fail "event with a wrong Basic password: 401" "status $code"
code=$(post "$URL?token=wrong-token-wrong-token")
[ "$code" = 401 ] && pass "event with a wrong ?token=: 401" || fail "event with a wrong ?token=: 401" "status $code"
code=$(post -u "tarema:$TOKEN" "$URL")
acked "$code" && pass "HTTP Basic with the token (Nextflow weblog.basicToken): $code" || fail "HTTP Basic with the token accepted" "status $code: $(cat "$WORK/resp")"
code=$(post "$URL?token=$TOKEN")
acked "$code" && pass "?token= in the URL (Nextflow without basicToken): $code" || fail "?token= in the URL accepted" "status $code: $(cat "$WORK/resp")"
code=$(post -H "Authorization: Bearer $TOKEN" "$URL/run-1")
acked "$code" && pass "Bearer token on a path under /weblog: $code" || fail "Bearer token accepted" "status $code: $(cat "$WORK/resp")"
code=$(post --cert "$TLS/client.crt" --key "$TLS/client.key" "$URL")
acked "$code" && pass "client certificate of the CA: $code" || fail "client certificate accepted" "status $code: $(cat "$WORK/resp")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data "$EVENT" "http://127.0.0.1:$PORT/weblog")
[ "$code" != 200 ] && [ "$code" != 202 ] && pass "no plain HTTP on the weblog port ($code)" || fail "no plain HTTP on the weblog port" "status $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TLS/ca.crt" "https://127.0.0.1:$PORT/healthz")
[ "$code" = 200 ] && pass "/healthz open on the weblog port" || fail "/healthz open on the weblog port" "status $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HPORT/metrics")
[ "$code" = 200 ] && pass "/metrics open on the health port" || fail "/metrics open on the health port" "status $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data "$EVENT" "http://127.0.0.1:$HPORT/weblog")
[ "$code" = 404 ] && pass "no weblog on the health port (404)" || fail "no weblog on the health port" "status $code"
n=$(find "$WORK/spool" -type f 2>/dev/null | wc -l)
[ "$n" -ge 1 ] && pass "accepted events were spooled ($n files), refused ones were not read" || fail "accepted events spooled" "$(ls -R "$WORK/spool" 2>&1 | head)"

out=$(timeout 10 "$BIN/tarema-labeler" serve --bind 0.0.0.0 --port 0 --spool "$WORK/spool2" --no-publish \
  --groups "$REPO_ROOT/tests/fixtures/labeler/groups_3.json" 2>&1)
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "without authentication" <<<"$out" &&
  pass "serve on 0.0.0.0 without a token or client CA is refused" || fail "serve on 0.0.0.0 without auth refused" "rc $rc: $(tail -n 3 <<<"$out")"
summary
