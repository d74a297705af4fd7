# tests/e2e/lib.sh: helpers for shell end-to-end tests. Sourced by each tests/e2e/*_test.sh.
# A test script calls `check NAME COMMAND...` or `pass NAME` / `fail NAME WHY` and ends with
# `summary`, which prints `N passed, N failed` like the C harness.
E2E_PASSED=0
E2E_FAILED=0
REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN="${TAREMA_BIN:-$REPO_ROOT/bin}"

pass() { E2E_PASSED=$((E2E_PASSED + 1)); echo "ok - $1"; }
fail() { E2E_FAILED=$((E2E_FAILED + 1)); echo "not ok - $1"; [ -n "${2:-}" ] && echo "    $2"; return 0; }
check() {
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(echo "$out" | tail -n 15 | sed 's/^/    /')"; fi
}
# wait_for SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds; returns 1 on timeout.
wait_for() {
  local deadline=$(($(date +%s) + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}
# grep -q for pipelines: it reads all of its input, so that under pipefail the writer never dies
# of SIGPIPE after an early match and fails the pipeline (kubectl writes line by line: CI saw
# `k api-versions | grep -qx scheduling.k8s.io/v1alpha1` fail with the line in the output).
# Exported, for the checks that run it inside `bash -c "..."` strings.
qgrep() { grep "$@" >/dev/null; }
# apply_shared ARGS...: `kubectl apply` of an object tests share (a CRD): two tests applying it at
# the same moment both see it absent and one gets AlreadyExists; applied again it is patched.
apply_shared() { kubectl apply "$@" >/dev/null 2>&1 || kubectl apply "$@" >/dev/null; }
export -f qgrep
summary() { echo "$E2E_PASSED passed, $E2E_FAILED failed"; [ "$E2E_FAILED" = 0 ]; }

# lotaru_dir: the Lotaru measurements (real data, ../shared/data/lotaru next to the checkout, or
# /work/shared/data/lotaru where the project's machines keep it, as hack/demo.sh); TAREMA_DATA
# overrides. Prints the first that holds chipseq_n1.csv, else the first candidate.
lotaru_dir() {
  local d
  for d in ${TAREMA_DATA:+"$TAREMA_DATA"} "$REPO_ROOT/../shared/data/lotaru" /work/shared/data/lotaru; do
    [ -f "$d/chipseq_n1.csv" ] && { echo "$d"; return; }
  done
  echo "${TAREMA_DATA:-$REPO_ROOT/../shared/data/lotaru}"
}
# lotaru_scenario NAME DEST: sim/scenarios/NAME.yaml copied to DEST with its relative lotaru
# paths (written for a checkout next to ../shared) pointed at lotaru_dir, so it runs from a
# clone anywhere.
lotaru_scenario() {
  sed "s#\.\./\.\./\.\./shared/data/lotaru#$(lotaru_dir)#g" "$REPO_ROOT/sim/scenarios/$1.yaml" >"$2"
}

# ---- reads that fail when the read fails ------------------------------------------------------
# A negative check ("none bound", "no double bind", "0 pods") must not pass because the read
# behind it failed: `kubectl get ... | grep -c .` reads an API error as 0. These helpers print the
# answer only when the command that produced it succeeded; otherwise they print nothing (so a
# comparison with 0 or any other value fails), say on stderr what failed, and return 1.
#
# read_ok COMMAND...: COMMAND's standard output, or nothing and status 1 when COMMAND fails.
read_ok() {
  local out rc errf
  errf=$(mktemp)
  out=$("$@" 2>"$errf")
  rc=$?
  if [ "$rc" != 0 ]; then
    echo "read failed (exit $rc): $*: $(tail -n 3 "$errf")" >&2
    rm -f "$errf"
    return 1
  fi
  rm -f "$errf"
  [ -z "$out" ] || printf '%s\n' "$out"
}
# count_lines COMMAND...: the number of non-empty lines COMMAND prints, or nothing and status 1
# when COMMAND fails.
count_lines() {
  local out
  out=$(read_ok "$@") || return 1
  grep -c . <<<"$out" || true
}
# read_jq FILTER COMMAND...: jq -r FILTER on COMMAND's output (JSON), or nothing and status 1 when
# COMMAND fails or its output is not JSON jq can read.
read_jq() {
  local filter=$1 out
  shift
  out=$(read_ok "$@") || return 1
  jq -r "$filter" <<<"$out" || { echo "read failed: jq '$filter' on the output of $*" >&2; return 1; }
}
export -f read_ok count_lines read_jq

# always_for SECONDS COMMAND...: COMMAND holds at every poll (0.2 s) for SECONDS; returns 1 at
# the first poll it does not. For a negative check that no positive event can close: the
# negative is asserted throughout the window instead of once after a fixed sleep.
always_for() {
  local deadline=$(($(date +%s) + $1))
  shift
  while [ "$(date +%s)" -lt "$deadline" ]; do
    "$@" >/dev/null 2>&1 || return 1
    sleep 0.2
  done
  "$@" >/dev/null 2>&1
}

# ---- dependencies: a test that cannot run fails naming what is missing; nothing skips ---------
# need_lotaru: the Lotaru measurements are present (lotaru_dir); else fails "Lotaru data
# present" naming where they were looked for, and returns 1.
need_lotaru() {
  local d
  d=$(lotaru_dir)
  [ -f "$d/chipseq_n1.csv" ] && return 0
  fail "Lotaru data present" "not found at $d (hack/install-deps.sh links ../shared; TAREMA_DATA overrides)"
  return 1
}
# need_database: DATABASE_URL is set; else fails naming it and returns 1.
need_database() {
  [ -n "${DATABASE_URL:-}" ] && return 0
  fail "DATABASE_URL set" "run under tests/run.sh, or hack/postgres.sh up and eval \"\$(hack/postgres.sh env)\""
  return 1
}
# need_cluster [SECONDS]: KUBECONFIG is set and the API server answers /readyz within SECONDS
# (30); else fails naming what is missing and returns 1. One failed /readyz is not taken for
# "no cluster".
need_cluster() {
  if [ -z "${KUBECONFIG:-}" ] || ! command -v kubectl >/dev/null; then
    fail "a cluster (KUBECONFIG and kubectl)" "run under tests/run.sh, or eval \"\$(hack/cluster.sh env)\""
    return 1
  fi
  wait_for "${1:-30}" kubectl get --raw /readyz && return 0
  fail "the cluster's API server is ready" "kubectl get --raw /readyz: $(kubectl get --raw /readyz 2>&1 | tail -n 3)"
  return 1
}
