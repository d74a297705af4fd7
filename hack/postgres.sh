#!/usr/bin/env bash
# hack/postgres.sh: a private PostgreSQL server (the Debian package's binaries, newest version
# installed) for the labeler's store in tests and the demo.
#
#   up      create the instance if needed (initdb, role tarema, database tarema) and start it
#   stop    stop the server, keep the data        start   start it again (data kept)
#   down    stop it and delete all its data       status  running or not; exit 0 when it answers
#   env     export lines for eval: DATABASE_URL, PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD,
#           and TAREMA_PG_DIR: the directory that really holds data/, log/ and run/ (see below)
#
# Instances: TAREMA_PG_NAME (default tarema). State in $TAREMA_CACHE/postgres/NAME: ports.env,
# password, and (normally) data/, log/postgres.log and the unix socket directory run/. It listens on 127.0.0.1
# on a free port and on that socket. Loopback TCP uses password (SCRAM) authentication, the
# socket trusts local users.
#
# PostgreSQL refuses to run as root: as root the server runs as the `postgres` system user
# (created if missing). When that user cannot reach the state dir (root's home is usually
# mode 700), data/, log/ and run/ live in /var/tmp/tarema-postgres/NAME instead; `env` and `status`
# say where.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
trap 'echo "error: hack/postgres.sh: command failed at line $LINENO: $BASH_COMMAND" >&2' ERR

NAME=${TAREMA_PG_NAME:-tarema}
[[ $NAME =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] ||
  die "TAREMA_PG_NAME '$NAME' is not usable: use 1-40 lower-case letters, digits or '-'"
DIR=$TAREMA_CACHE/postgres/$NAME
PG_USER=tarema
PG_DB=tarema

pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
    step "PostgreSQL server binaries not found: running hack/install-deps.sh"
    bash "$HACK_DIR/install-deps.sh"
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] && [ -x "$d/initdb" ] || die "no PostgreSQL server under /usr/lib/postgresql/*/bin: install the Debian package postgresql"
  fi
  echo "$d"
}

# as_owner CMD...: runs CMD as the user that owns the server (postgres when we are root).
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ensure_postgres_user() {
  [ "$(id -u)" = 0 ] || return 0
  id postgres >/dev/null 2>&1 && return 0
  step "creating system user postgres"
  useradd --system --user-group --home-dir /var/lib/postgresql --no-create-home --shell /usr/sbin/nologin postgres ||
    die "could not create the postgres system user (PostgreSQL refuses to run as root)"
}

# Where data/ and run/ live: recorded at creation in $DIR/home.
home_dir() { cat "$DIR/home" 2>/dev/null || echo "$DIR"; }

load() {
  [ -f "$DIR/ports.env" ] || drop_lock
  [ -f "$DIR/ports.env" ] || die "no PostgreSQL instance '$NAME' ($DIR/ports.env missing): run 'TAREMA_PG_NAME=$NAME hack/postgres.sh up' first"
  # shellcheck source=/dev/null
  . "$DIR/ports.env"
  HOME_DIR=$(home_dir)
  DATA=$HOME_DIR/data
  SOCK=$HOME_DIR/run
  LOG=$HOME_DIR/log/postgres.log
  PASSWORD=$(cat "$DIR/password")
}

# Same scheme as hack/cluster.sh: a free loopback port no other tarema instance recorded,
# below the kernel's ephemeral range, picked under a shared lock.
alloc_port() {
  mkdir -p "$TAREMA_CACHE"
  local lock=$TAREMA_CACHE/.ports.lock taken p i
  exec 9>"$lock"
  flock -w 30 9 || die "could not lock $lock to pick a port"
  taken=$(cat "$TAREMA_CACHE"/clusters/*/ports.env "$TAREMA_CACHE"/postgres/*/ports.env 2>/dev/null |
    sed -n 's/^[A-Z_]*=\([0-9][0-9]*\)$/\1/p' || true)
  p=
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    grep -qx "$p" <<<"$taken" && { p=; continue; }
    ss -Htln "sport = :$p" 2>/dev/null | grep -q . && { p=; continue; }
    break
  done
  [ -n "$p" ] || die "no free port found on 127.0.0.1 in 20000-31999"
  echo "PG_PORT=$p" >"$DIR/ports.env"
  flock -u 9
  exec 9>&-
}

running() { [ -f "$DATA/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
answers() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 2 >/dev/null 2>&1; }

psql_admin() {
  "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PG_PORT" -U postgres -d postgres "$@"
}

create_instance() {
  ensure_postgres_user
  mkdir -p "$DIR"
  chmod 755 "$DIR"
  local home=$DIR
  if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$DIR" 2>/dev/null; then
    home=/var/tmp/tarema-postgres/$NAME
    step "the postgres user cannot reach $DIR: keeping data in $home"
  fi
  echo "$home" >"$DIR/home"
  rm -rf "$home/data" "$home/run" "$home/log"
  mkdir -p "$home/data" "$home/run" "$home/log"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$home/data" "$home/run" "$home/log"
  chmod 700 "$home/data"
  chmod 755 "$home/run"
  openssl rand -hex 16 >"$DIR/password"
  chmod 600 "$DIR/password"
  alloc_port
  load
  step "initdb $DATA (PostgreSQL $("$BIN/postgres" --version | awk '{print $3}'))"
  as_owner "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --no-locale --no-sync \
    --auth-local=trust --auth-host=scram-sha-256 >"$DIR/initdb.log" 2>&1 ||
    { tail -n 20 "$DIR/initdb.log" >&2; die "initdb failed (log: $DIR/initdb.log)"; }
  # Test data only: no fsync, so tests that write many rows stay fast.
  as_owner tee -a "$DATA/postgresql.conf" >/dev/null <<EOF

# written by hack/postgres.sh
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$SOCK'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
log_line_prefix = '%m [%p] %q%u@%d '
EOF
}

start_server() {
  if running; then
    return 0
  fi
  step "starting PostgreSQL '$NAME' on 127.0.0.1:$PG_PORT"
  # Its own session, so the server outlives this script and the caller's process group.
  if ! as_owner setsid -w "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start </dev/null >>"$DIR/pg_ctl.log" 2>&1 8>&- 9>&-; then
    tail -n 20 "$LOG" >&2 || true
    die "PostgreSQL did not start (log: $LOG)"
  fi
  local deadline=$((SECONDS + 30))
  until answers; do
    [ $SECONDS -ge $deadline ] && die "PostgreSQL started but does not answer on 127.0.0.1:$PG_PORT (log: $LOG)"
    sleep 0.1
  done
}

# alive PID: the process exists and is not a zombie.
alive() {
  local st
  st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

stop_server() {
  running || return 0
  local pid i
  pid=$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null || true)
  step "stopping PostgreSQL '$NAME' (pid $pid)"
  if ! as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >>"$DIR/pg_ctl.log" 2>&1; then
    [ -n "$pid" ] && kill -s KILL "$pid" 2>/dev/null || true
  fi
  # pg_ctl returns once postmaster.pid is gone, a moment before the process itself exits.
  for i in $(seq 1 100); do
    [ -n "$pid" ] && alive "$pid" || return 0
    sleep 0.05
  done
  die "PostgreSQL (pid $pid) did not stop"
}

ensure_role_db() {
  psql_admin -tA -c "SELECT 1 FROM pg_roles WHERE rolname = '$PG_USER'" | grep -q 1 ||
    psql_admin -c "CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PASSWORD'"
  psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" | grep -q 1 ||
    psql_admin -c "CREATE DATABASE $PG_DB OWNER $PG_USER"
}

cmd_up() {
  BIN=$(pg_bindir)
  local t0=$SECONDS
  if [ -f "$DIR/ports.env" ] && [ -f "$(home_dir)/data/PG_VERSION" ]; then
    load
  else
    create_instance
  fi
  start_server
  ensure_role_db
  # The real proof: the URL that `env` prints works.
  PGPASSWORD=$PASSWORD "$BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -tA -c 'SELECT 1' >/dev/null ||
    die "PostgreSQL runs but $PG_USER cannot log in to $PG_DB on 127.0.0.1:$PG_PORT (log: $LOG)"
  step "PostgreSQL '$NAME' up in $((SECONDS - t0))s on 127.0.0.1:$PG_PORT, eval \"\$(TAREMA_PG_NAME=$NAME hack/postgres.sh env)\""
}

cmd_down() {
  if [ ! -d "$DIR" ]; then
    drop_lock
    step "PostgreSQL '$NAME' is not up: nothing to stop"
    return 0
  fi
  BIN=$(pg_bindir)
  if [ -f "$DIR/ports.env" ]; then
    load
    stop_server
  fi
  local home
  home=$(home_dir)
  [ "$home" != "$DIR" ] && rm -rf "$home"
  rm -rf "$DIR"
  drop_lock
  step "PostgreSQL '$NAME' stopped, data removed"
}

cmd_status() {
  BIN=$(pg_bindir)
  if [ ! -f "$DIR/ports.env" ]; then
    echo "PostgreSQL '$NAME': not up ($DIR does not exist)"
    return 1
  fi
  load
  if running && answers; then
    echo "PostgreSQL '$NAME': running (pid $(head -n 1 "$DATA/postmaster.pid")), answering on 127.0.0.1:$PG_PORT and $SOCK, data $DATA"
  elif running; then
    echo "PostgreSQL '$NAME': running but NOT answering on 127.0.0.1:$PG_PORT (log: $LOG)"
    return 1
  else
    echo "PostgreSQL '$NAME': stopped (data kept in $DATA)"
    return 1
  fi
}

cmd_env() {
  load
  echo "export DATABASE_URL=postgresql://$PG_USER:$PASSWORD@127.0.0.1:$PG_PORT/$PG_DB"
  echo "export PGHOST=127.0.0.1"
  echo "export PGPORT=$PG_PORT"
  echo "export PGUSER=$PG_USER"
  echo "export PGDATABASE=$PG_DB"
  echo "export PGPASSWORD=$PASSWORD"
  # Where the data really is: $DIR, or /var/tmp/tarema-postgres/NAME as root (home_dir).
  echo "export TAREMA_PG_DIR=$HOME_DIR"
}

# One command at a time per instance (lock_instance in hack/lib.sh).
LOCK=$TAREMA_CACHE/postgres/.$NAME.lock

cmd=${1:-}
case $cmd in
  up | down | start | stop) lock_instance 300 "PostgreSQL instance '$NAME' (hack/postgres.sh)" ;;
esac
case $cmd in
  up) cmd_up ;;
  down) cmd_down ;;
  start) BIN=$(pg_bindir); load; start_server ;;
  stop) BIN=$(pg_bindir); load; stop_server ;;
  status) cmd_status || exit 1 ;;
  env) cmd_env ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
