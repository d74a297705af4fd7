#!/usr/bin/env bash
# End-to-end check of hack/postgres.sh on a private instance (the shared one tests/run.sh
# started is only read): `up` creates role and database tarema reachable through the
# DATABASE_URL `env` prints, a second `up` is a no-op, `stop` refuses connections and keeps
# the data that `start` brings back on the same port, and `down` leaves no server process
# and no data behind.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
PG=$REPO_ROOT/hack/postgres.sh
export TAREMA_PG_NAME=e2e-pg-$$
DIR=$TAREMA_CACHE/postgres/$TAREMA_PG_NAME
pg() { bash "$PG" "$@"; }
cleanup() { pg down >/dev/null 2>&1 || true; }
trap cleanup EXIT

# The shared instance, when tests/run.sh provides one, answers through its DATABASE_URL.
if [ -n "${DATABASE_URL:-}" ]; then
  check "the shared instance answers through DATABASE_URL" bash -c "[ \"\$(psql -X '$DATABASE_URL' -tAc 'select current_user')\" = tarema ]"
fi

out=$(pg up 2>&1)
if [ $? != 0 ]; then
  fail "up of a private PostgreSQL instance '$TAREMA_PG_NAME'" "$out"
  summary
  exit 1
fi
pass "up of a private PostgreSQL instance '$TAREMA_PG_NAME'"
env_out=$(pg env)
(
  unset DATABASE_URL PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD
  eval "$env_out"
  for v in DATABASE_URL PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD; do
    [ -n "${!v:-}" ] || { echo "env does not set $v"; exit 1; }
  done
  [[ $DATABASE_URL =~ ^postgresql://tarema:[^@]+@127\.0\.0\.1:$PGPORT/tarema$ ]] || { echo "DATABASE_URL=$DATABASE_URL"; exit 1; }
) >"$DIR.envcheck" 2>&1
if [ $? = 0 ]; then pass "env sets DATABASE_URL and PGHOST/PGPORT/PGUSER/PGDATABASE/PGPASSWORD"; else fail "env sets the PostgreSQL variables" "$(cat "$DIR.envcheck")"; fi
rm -f "$DIR.envcheck"
# TAREMA_PG_DIR names where the data really lives (as root: /var/tmp/tarema-postgres/NAME when
# the postgres user cannot reach the cache), the directory with data/, log/ and run/.
pg_dir=$(sed -n 's/^export TAREMA_PG_DIR=//p' <<<"$env_out")
status_data=$(pg status | sed -n 's/.*, data \(.*\)$/\1/p')
if [ -n "$pg_dir" ] && [ -f "$pg_dir/data/PG_VERSION" ] && [ -f "$pg_dir/log/postgres.log" ] &&
  [ "$status_data" = "$pg_dir/data" ]; then
  pass "env's TAREMA_PG_DIR ($pg_dir) holds data/ and log/, as status says"
else
  fail "env's TAREMA_PG_DIR holds the data" "TAREMA_PG_DIR='$pg_dir', status says data '$status_data'"
fi
url=$(sed -n 's/^export DATABASE_URL=//p' <<<"$env_out")
port=$(sed -n 's/^export PGPORT=//p' <<<"$env_out")
q() { psql -X -v ON_ERROR_STOP=1 "$url" -tA -c "$1"; }

who() { [ "$(q "select current_user || ' ' || current_database()")" = "tarema tarema" ]; }
check "connect as tarema through DATABASE_URL, password authentication" who
check "a wrong password is refused" bash -c "! psql -X '${url/tarema:/tarema:wrong}' -tAc 'select 1'"
check "tarema may create tables and write" q "create table events(id serial primary key, body text); insert into events(body) values ('a'), ('b')"
check "the server listens on 127.0.0.1 only" bash -c "[ \"\$(psql -X '$url' -tAc 'show listen_addresses')\" = 127.0.0.1 ]"

out=$(pg up 2>&1)
if [ $? = 0 ] && ! grep -q 'initdb\|starting' <<<"$out"; then pass "a second up keeps the running instance"; else fail "a second up keeps the running instance" "$out"; fi

check "stop" pg stop
if ! psql -X "$url" -tAc 'select 1' >/dev/null 2>&1; then pass "connections are refused while stopped"; else fail "connections are refused while stopped"; fi
if ! pg status >/dev/null 2>&1; then pass "status exits non-zero while stopped"; else fail "status exits non-zero while stopped"; fi
check "start" pg start
check "status exits 0 when running" pg status
if [ "$(sed -n 's/^export PGPORT=//p' <<<"$(pg env)")" = "$port" ]; then pass "start keeps the port ($port)"; else fail "start keeps the port" "$(pg env)"; fi
rows() { [ "$(q "select string_agg(body, ',' order by id) from events")" = "a,b" ]; }
check "the rows written before stop are there after start" rows

st=$(pg status)
data=$(sed -n 's/.*data \(.*\)$/\1/p' <<<"$st")
master=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$st")
procs="$master $(ps -o pid= --ppid "$master" 2>/dev/null | tr '\n' ' ')"
check "down" pg down
left=""
# A zombie waiting for init to reap it is no longer running.
for p in $procs; do
  st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$p/status" 2>/dev/null || true)
  [ -n "$st" ] && [ "$st" != Z ] && left+="$p "
done
if [ -n "$master" ] && [ -z "$left" ]; then pass "down leaves no postgres process (were: $procs)"; else fail "down leaves no postgres process" "still alive: $left (of '$procs')"; fi
if [ ! -e "$DIR" ] && [ -n "$data" ] && [ ! -e "$data" ]; then pass "down removes the state and data directories"; else fail "down removes the state and data directories" "$DIR, data '$data'"; fi
msg=$(pg env 2>&1)
if [ $? != 0 ] && grep -q "no PostgreSQL instance '$TAREMA_PG_NAME'" <<<"$msg"; then pass "env of a missing instance says so"; else fail "env of a missing instance says so" "$msg"; fi

summary
