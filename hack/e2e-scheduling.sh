#!/usr/bin/env bash
# hack/e2e-scheduling.sh: Kubernetes' own [sig-scheduling] end-to-end specs (upstream e2e.test,
# hack/build-e2e.sh) against the local control plane, once with kube-scheduler and once with
# tarema-scheduler as the cluster's only scheduler (--scheduler-name default-scheduler), each on a
# fresh cluster instance of its own (5 kwok nodes in two zones,
# tests/fixtures/nodes/e2e-scheduling.yaml). docs/conformance.md explains the results.
#
#   run kube|tarema OUTDIR [--focus RE] [--skip RE]
#         one scheduler; OUTDIR gets junit-SCHED.xml, e2e-SCHED.log (and, for tarema, its log)
#   compare OUTDIR [--focus RE] [--skip RE] [--expected FILE]
#         both schedulers side by side (two instances at once: the specs mostly wait), then
#         the report: OUTDIR/report.md (per spec: kube-scheduler's and tarema's result)
#   report OUTDIR [--expected FILE]
#         the report again from OUTDIR's two JUnit files, printed and written to report.md
#
# --focus/--skip: ginkgo regular expressions on the spec text (default: the kwok-runnable set,
# SPECS_FOCUS/SPECS_SKIP below; hack/e2e/specs.py focus FILE makes one from a spec list that
# matches at every version). --expected: a file of spec texts (one a line, # comments)
# expected to fail under tarema until an issue is done; the report marks them, and with it the
# command fails (status 1) when tarema fails a spec kube-scheduler passes that is not listed.
# Environment: TAREMA_E2E_POLICY (tarema's --policy, default tarema), BINDIR (bin),
# TAREMA_E2E_TIMEOUT (ginkgo's suite timeout, default 90m).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The specs that can run on kwok nodes: the scheduler's predicates, priorities (scoring),
# topology spreading, multi-zone spreading and preemption. LimitRange and Workload are
# admission and API specs, not scheduling ones.
SPECS_FOCUS='\[sig-scheduling\] (SchedulerPredicates|SchedulerPriorities|SchedulerPreemption|Multi-AZ Clusters)'
# Feature-gated (alpha) and disruptive specs need a cluster configured for them.
SPECS_SKIP='\[Feature:|\[Disruptive\]|\[Flaky\]'
NODES=$REPO_ROOT/tests/fixtures/nodes/e2e-scheduling.yaml
BIN=${BINDIR:-$REPO_ROOT/bin}
case $BIN in /*) ;; *) BIN=$REPO_ROOT/$BIN ;; esac

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }

# instance SCHED: the cluster instance a run uses; unique per run so parallel runs never meet.
instance() { echo "e2e-$1-$$"; }

# run_one SCHED OUTDIR FOCUS SKIP: brings up the instance, starts the scheduler, runs the specs,
# tears the instance down. Returns e2e.test's status (non-zero when a spec failed).
run_one() {
  local sched=$1 out=$2 focus=$3 skip=$4 name rc=0 e2e
  name=$(instance "$sched")
  mkdir -p "$out"
  e2e=$(bash "$HACK_DIR/build-e2e.sh" --path) || die "e2e.test could not be built (hack/build-e2e.sh)"
  export TAREMA_CLUSTER_NAME=$name
  # shellcheck disable=SC2064
  trap "run_cleanup '$name'" EXIT
  step "[$sched] cluster instance $name: 5 kwok nodes in two zones"
  bash "$HACK_DIR/cluster.sh" up --nodes "$NODES" >"$out/cluster-$sched.log" 2>&1 ||
    { tail -n 20 "$out/cluster-$sched.log" >&2; die "[$sched] hack/cluster.sh up failed (log: $out/cluster-$sched.log)"; }
  eval "$(bash "$HACK_DIR/cluster.sh" env)"
  case $sched in
    kube)
      bash "$HACK_DIR/cluster.sh" scheduler start >>"$out/cluster-$sched.log" 2>&1 ||
        die "[kube] kube-scheduler did not start (log: $out/cluster-$sched.log)"
      ;;
    tarema)
      [ -x "$BIN/tarema-scheduler" ] || die "$BIN/tarema-scheduler not found: run make"
      # The cluster's only scheduler: it takes the pods of schedulerName default-scheduler,
      # which is every pod the specs create. No kube-scheduler runs on this instance.
      # the log exists before the scheduler starts: the wait below reads it at once, and a read
      # of a file the background shell had not created yet ended this script (set -e, pipefail;
      # seen once: the tarema run wrote no report and said nothing)
      : >"$out/tarema-scheduler.log"
      "$BIN/tarema-scheduler" --scheduler-name default-scheduler --policy "${TAREMA_E2E_POLICY:-tarema}" \
        --leader-elect=false --port 0 --bind-address 127.0.0.1 --kubeconfig "$KUBECONFIG" \
        >"$out/tarema-scheduler.log" 2>&1 &
      TAREMA_PID=$!
      local port="" i
      for i in $(seq 1 150); do
        port=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$out/tarema-scheduler.log" | head -n 1) || true
        [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        kill -0 "$TAREMA_PID" 2>/dev/null || break
        sleep 0.2
      done
      [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 ||
        { tail -n 20 "$out/tarema-scheduler.log" >&2; die "[tarema] tarema-scheduler did not become ready (log: $out/tarema-scheduler.log)"; }
      ;;
  esac
  local shown=$focus
  [ ${#shown} -le 160 ] || shown="${focus:0:157}..."
  step "[$sched] running e2e.test (focus: $shown)"
  local t0=$SECONDS
  "$e2e" --kubeconfig="$KUBECONFIG" --provider=skeleton --report-dir="$out/report-$sched" \
    --ginkgo.focus="$focus" --ginkgo.skip="$skip" --ginkgo.junit-report="$out/junit-$sched.xml" \
    --ginkgo.timeout="${TAREMA_E2E_TIMEOUT:-90m}" --ginkgo.no-color --ginkgo.v \
    >"$out/e2e-$sched.log" 2>&1 || rc=$?
  step "[$sched] e2e.test finished in $((SECONDS - t0)) s (status $rc; log $out/e2e-$sched.log)"
  [ -f "$out/junit-$sched.xml" ] || die "[$sched] e2e.test wrote no JUnit report (log: $out/e2e-$sched.log)"
  return $rc
}

run_cleanup() {
  [ -n "${TAREMA_PID:-}" ] && { kill "$TAREMA_PID" 2>/dev/null; wait "$TAREMA_PID" 2>/dev/null; } || true
  TAREMA_CLUSTER_NAME=$1 bash "$HACK_DIR/cluster.sh" down >/dev/null 2>&1 || true
}

# The table: per spec (the JUnit test case's name without ginkgo's "[It] ", the suite's labels
# and the [Serial] tag, hack/e2e/specs.py: the same name at every Kubernetes version)
# kube-scheduler's and tarema's result, and a summary line per scheduler.
report() {
  local out=$1 expected=${2:-}
  python3 "$HACK_DIR/e2e/report.py" --kube "$out/junit-kube.xml" --tarema "$out/junit-tarema.xml" \
    ${expected:+--expected "$expected" --fail-unexpected} --markdown "$out/report.md"
}

parse_opts() {
  FOCUS=$SPECS_FOCUS SKIP=$SPECS_SKIP EXPECTED=""
  while [ $# -gt 0 ]; do
    case $1 in
      --focus) FOCUS=${2:?--focus needs a regular expression}; shift 2 ;;
      --skip) SKIP=${2:?--skip needs a regular expression}; shift 2 ;;
      --expected) EXPECTED=${2:?--expected needs a file}; [ -f "$EXPECTED" ] || die "--expected: $EXPECTED not found"; shift 2 ;;
      *) die "unknown argument '$1' (hack/e2e-scheduling.sh --help)" ;;
    esac
  done
}

cmd=${1:-}
shift || true
case $cmd in
  run)
    [ $# -ge 2 ] || usage
    sched=$1 out=$2
    shift 2
    case $sched in kube | tarema) ;; *) die "run: scheduler must be kube or tarema, not '$sched'" ;; esac
    parse_opts "$@"
    run_one "$sched" "$out" "$FOCUS" "$SKIP"
    ;;
  compare)
    [ $# -ge 1 ] || usage
    out=$1
    shift
    parse_opts "$@"
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    rm -f "$out"/junit-*.xml
    bash "$HACK_DIR/build-e2e.sh" || die "e2e.test could not be built (hack/build-e2e.sh)"
    t0=$SECONDS
    # Both at once, each on its own instance: the specs mostly wait on pods and timeouts.
    bash "$0" run kube "$out" --focus "$FOCUS" --skip "$SKIP" &
    kpid=$!
    bash "$0" run tarema "$out" --focus "$FOCUS" --skip "$SKIP" &
    tpid=$!
    wait $kpid || true
    wait $tpid || true
    step "both runs done in $((SECONDS - t0)) s"
    [ -f "$out/junit-kube.xml" ] && [ -f "$out/junit-tarema.xml" ] || die "a run wrote no JUnit report (logs in $out)"
    report "$out" "$EXPECTED"
    ;;
  report)
    [ $# -ge 1 ] || usage
    out=$1
    shift
    parse_opts "$@"
    report "$out" "$EXPECTED"
    ;;
  -h | --help | help | "") usage ;;
  *) echo "unknown command '$cmd'" >&2; usage ;;
esac
