#!/usr/bin/env bash
# tests/run.sh unit|e2e|all: runs the test programs and adds up their `N passed, N failed`
# lines into one closing line. A program that dies without its summary line, or exits non-zero
# with no failure counted, counts as one failure: a crash is never a pass.
#
# The e2e tests get one real local control plane (hack/cluster.sh) and one real PostgreSQL
# (hack/postgres.sh) for the whole run, torn down on exit. Tests that need their own node set
# create it through the API; kwok manages every node. Up to E2E_JOBS e2e tests run at once
# (below).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT=$(pwd)
export REPO_ROOT
O=${O:-build}
# Absolute path of the binaries under test; e2e scripts and C tests read TAREMA_BIN.
TAREMA_BIN=$(cd "${BINDIR:-bin}" 2>/dev/null && pwd || echo "$REPO_ROOT/bin")
export TAREMA_BIN
mode=${1:-all}
passed=0
failed=0
failures=()
TEST_TIMEOUT=${TEST_TIMEOUT:-900}
# One control plane and PostgreSQL per run, so two runs on one machine never stop each
# other's instances.
export TAREMA_CLUSTER_NAME=${TAREMA_CLUSTER_NAME:-run-$$}
export TAREMA_PG_NAME=${TAREMA_PG_NAME:-run-$$}

selected() { # name: TEST_FILTER (an extended regular expression on names like unit/x_test,
  # e2e/y_test.sh) runs a subset: `make test-sanitize` uses it. Unset, everything runs.
  [ -z "${TEST_FILTER:-}" ] || [[ $1 =~ $TEST_FILTER ]]
}

# tally NAME LOG STATUS SECONDS: counts one finished test from its log's summary line.
tally() {
  local name=$1 log=$2 rc=$3 secs=$4
  local line; line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  local p=0 f=0
  if [ -n "$line" ]; then
    p=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3)
  fi
  if [ -z "$line" ] || { [ "$rc" != 0 ] && [ "$f" = 0 ]; }; then
    echo "not ok - $name exited with status $rc without reporting its failures"
    f=$((f + 1))
  fi
  passed=$((passed + p)); failed=$((failed + f))
  [ "$f" != 0 ] && failures+=("$name")
  echo "--- $name: $p passed, $f failed ($secs s)"
}

# run_one NAME COMMAND...: runs one test with nothing beside it, its output shown as it comes.
run_one() {
  local name=$1; shift
  selected "$name" || return 0
  local log; log=$(mktemp)
  local start=$SECONDS
  echo "=== $name"
  timeout --kill-after=10 "$TEST_TIMEOUT" "$@" 2>&1 | tee "$log"
  tally "$name" "$log" "${PIPESTATUS[0]}" $((SECONDS - start))
  rm -f "$log"
}

# E2E_JOBS e2e tests run at once (default 2: most of an e2e test's time is spent waiting on the
# control plane, a scheduler or kwok, about half a core each). A test runs beside others unless
# its source says `e2e-run: alone` with the reason (it stops a shared component, counts
# cluster-wide objects, or its timing would not survive a loaded machine); those run one by one
# after the others. A test beside others has its output held and shown whole when it ends, so
# two tests' lines never mix; ">>> NAME" marks its start.
E2E_JOBS=${E2E_JOBS:-2}
declare -A POOL=() # pid -> "name dir start"

# e2e_marked TEST WORD: the test's source (the script, or the C file of a built program) says
# `e2e-run: WORD`. alone: it runs with nothing beside it. early: it takes well over a minute, so
# it starts before the others and the short ones fill the lanes around it instead of one long
# test finishing alone at the end.
e2e_marked() {
  local src=$1
  case $src in *.sh) ;; *) src=tests/e2e/$(basename "$src").c ;; esac
  grep -q "e2e-run: $2" "$src" 2>/dev/null
}
runs_alone() { e2e_marked "$1" alone; }

pool_start() { # name command...
  local name=$1; shift
  while [ ${#POOL[@]} -ge "$E2E_JOBS" ]; do pool_reap; done
  local dir; dir=$(mktemp -d)
  echo ">>> $name started ($(( ${#POOL[@]} + 1 )) running)"
  (
    timeout --kill-after=10 "$TEST_TIMEOUT" "$@" >"$dir/log" 2>&1
    echo $? >"$dir/status"
  ) &
  POOL[$!]="$name $dir $SECONDS"
}

pool_reap() { # waits for any running test and shows it
  local pid="" name dir start
  wait -n -p pid "${!POOL[@]}"
  [ -n "$pid" ] || return 0
  read -r name dir start <<<"${POOL[$pid]}"
  unset "POOL[$pid]"
  echo "=== $name"
  cat "$dir/log"
  tally "$name" "$dir/log" "$(cat "$dir/status" 2>/dev/null || echo 1)" $((SECONDS - start))
  rm -rf "$dir"
}

run_unit() {
  for t in "$O"/tests/unit/*_test; do
    [ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
  done
}

e2e_down() {
  local pid
  for pid in "${!POOL[@]}"; do pkill -TERM -P "$pid" 2>/dev/null; done # the tests still running
  bash hack/cluster.sh down >/dev/null 2>&1 || true
  bash hack/postgres.sh down >/dev/null 2>&1 || true
}

# e2e_start: brings up the control plane and PostgreSQL in the background, both at once (they
# share nothing), so that in `all` mode their start (some 25 s) overlaps the unit tests instead
# of following them; run_e2e waits for both (e2e_ready). Their output is shown by e2e_ready.
E2E_UP=""
e2e_start() {
  trap e2e_down EXIT INT TERM
  E2E_UP=$(mktemp -d)
  (bash hack/cluster.sh up --workload-api >"$E2E_UP/cluster.log" 2>&1; echo $? >"$E2E_UP/cluster.rc") &
  E2E_CLUSTER_PID=$!
  (bash hack/postgres.sh up >"$E2E_UP/postgres.log" 2>&1; echo $? >"$E2E_UP/postgres.rc") &
  E2E_PG_PID=$!
}
# e2e_ready: waits for e2e_start's two starts, shows their output, and takes their environment;
# status 1 (and a failure counted) when either did not come up.
e2e_ready() {
  wait "$E2E_CLUSTER_PID" "$E2E_PG_PID"
  cat "$E2E_UP/cluster.log" "$E2E_UP/postgres.log"
  local crc pgrc
  crc=$(cat "$E2E_UP/cluster.rc" 2>/dev/null) pgrc=$(cat "$E2E_UP/postgres.rc" 2>/dev/null)
  rm -rf "$E2E_UP"
  if [ "$crc" != 0 ]; then
    echo "not ok - local control plane did not start (hack/cluster.sh up)"
    failed=$((failed + 1)); failures+=("cluster-up"); return 1
  fi
  eval "$(bash hack/cluster.sh env)"
  if [ "$pgrc" != 0 ]; then
    echo "not ok - PostgreSQL did not start (hack/postgres.sh up)"
    failed=$((failed + 1)); failures+=("postgres-up"); return 1
  fi
  eval "$(bash hack/postgres.sh env)"
}

# e2e_test RUNNER TEST: hands one e2e test to run_one or pool_start under its name, a script
# through bash, a built program as it is.
e2e_test() {
  case $2 in
    *.sh) "$1" "e2e/$(basename "$2")" bash "$2" ;;
    *) "$1" "e2e/$(basename "$2")" "$2" ;;
  esac
}

run_e2e() {
  [ -n "$E2E_UP" ] || e2e_start
  e2e_ready || return
  local t pool=() alone=()
  for t in "$O"/tests/e2e/*_test tests/e2e/*_test.sh; do
    [ -e "$t" ] || continue
    selected "e2e/$(basename "$t")" || continue
    if runs_alone "$t" || [ "$E2E_JOBS" -le 1 ]; then
      alone+=("$t")
    elif e2e_marked "$t" early; then
      pool=("$t" "${pool[@]}")
    else
      pool+=("$t")
    fi
  done
  # kube-scheduler (the reference the comparing tests run beside tarema, and the scheduler of
  # the planner's pods) runs for the whole pool: the tests that need it start it only when it
  # is not running and stop only what they started, so none stops it under another. The tests
  # that run alone get the cluster as before, without it (some need it stopped).
  if [ ${#pool[@]} -gt 0 ]; then
    bash hack/cluster.sh scheduler start >/dev/null ||
      echo "# kube-scheduler did not start for the pool; the tests that need it start it themselves"
  fi
  for t in "${pool[@]}"; do
    e2e_test pool_start "$t"
  done
  while [ ${#POOL[@]} -gt 0 ]; do pool_reap; done
  [ ${#pool[@]} -gt 0 ] && bash hack/cluster.sh scheduler stop >/dev/null
  for t in "${alone[@]}"; do
    e2e_test run_one "$t"
  done
}

case $mode in
  unit) run_unit ;;
  e2e) run_e2e ;;
  all) e2e_start; run_unit; run_e2e ;;
  *) echo "usage: tests/run.sh unit|e2e|all" >&2; exit 2 ;;
esac

echo
[ ${#failures[@]} -gt 0 ] && echo "failing: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
