#!/usr/bin/env bash
# dam_store_test.sh: the DAM shares the labeler's database (the chart gives both the same
# DATABASE_URL). Its table must not take the labeler's schema versions, nor be refused by them:
# labeler first, then the DAM stores a request; DAM first, then the labeler's migrations all
# apply (before the fix the DAM's schema_migrations row "1" made the labeler skip its
# migration 1, and a labeler database at version 4 made the DAM refuse to start).
# Needs DATABASE_URL (hack/postgres.sh env); no cluster (the one member is unreachable).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
[ -n "${DATABASE_URL:-}" ] || { fail "DATABASE_URL" "run with hack/postgres.sh up and its env"; summary; exit 1; }
TMP=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
db_url() { python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$DATABASE_URL" "$1"; }
fresh() { psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null 2>&1; }
printf 'clusters:\n  - {name: gone, kubeconfig: %s/none.kubeconfig}\n' "$TMP" >"$TMP/fed.yaml"
# serve DB: starts the DAM on DB, POSTs a job, prints the request's state once stored
serve_and_post() {
  : >"$TMP/serve.log"
  "$BIN/tarema-dam" serve --federation "$TMP/fed.yaml" --db "$1" --bind 127.0.0.1 --port 0 --health-port -1 >"$TMP/serve.log" 2>&1 &
  PID=$!
  wait_for 15 grep -q 'listening on' "$TMP/serve.log" || { cat "$TMP/serve.log"; kill $PID 2>/dev/null; PID=; return 1; }
  local port
  port=$(sed -nE 's/.*listening on [^ ]*:([0-9]+) .*/\1/p' "$TMP/serve.log" | tail -n 1)
  curl -sf -d '{"job": {"name": "x", "cores": 1, "runtime": "1h"}}' "http://127.0.0.1:$port/api/v1/requests" >/dev/null
  local rc=$?
  kill $PID 2>/dev/null; wait $PID 2>/dev/null; PID=
  [ $rc = 0 ] && [ "$(psql "$1" -Atc 'SELECT count(*) FROM dam_requests')" = 1 ]
}

fresh dam_store_lab_first
A=$(db_url dam_store_lab_first)
check "labeler first: tarema-labeler migrate" "$BIN/tarema-labeler" migrate --db "$A"
check "then the DAM starts on the labeler's database and stores a request" serve_and_post "$A"

fresh dam_store_dam_first
B=$(db_url dam_store_dam_first)
check "DAM first: it starts on an empty database and stores a request" serve_and_post "$B"
check "then every labeler migration applies (task_runs, asa_waits exist)" bash -c "
  '$BIN/tarema-labeler' migrate --db '$B' && [ \"\$(psql '$B' -Atc \"SELECT count(*) FROM information_schema.tables WHERE table_name IN ('task_runs', 'asa_waits')\")\" = 2 ]"
psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS dam_store_lab_first" -c "DROP DATABASE IF EXISTS dam_store_dam_first" >/dev/null 2>&1
summary
