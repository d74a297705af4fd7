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
