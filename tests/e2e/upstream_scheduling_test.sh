#!/usr/bin/env bash
# tests/e2e/upstream_scheduling_test.sh: Kubernetes' own [sig-scheduling] e2e specs (upstream
# e2e.test, hack/build-e2e.sh) that fit `make test`'s time budget, run by hack/e2e-scheduling.sh
# under kube-scheduler and under tarema-scheduler as the cluster's only scheduler, each on a
# fresh 5-node instance of its own. One check per spec and scheduler: kube-scheduler must pass
# it (else the local cluster regressed) and tarema must pass every spec kube-scheduler passes.
# The specs are listed in tests/e2e/upstream_scheduling_specs.txt (those without 120-300 s
# timeouts); `make conformance` runs the whole set (docs/conformance.md).
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# UPSTREAM_SCHEDULING_SPECS: another spec list (one spec text a line), to try other specs.
SPECS=${UPSTREAM_SCHEDULING_SPECS:-$REPO_ROOT/tests/e2e/upstream_scheduling_specs.txt}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if ! bash "$REPO_ROOT/hack/build-e2e.sh" >"$WORK/build.log" 2>&1; then
  fail "e2e.test builds (hack/build-e2e.sh)" "$(tail -n 5 "$WORK/build.log")"
  summary
  exit 1
fi
# the version hack/lib.sh picks (TAREMA_K8S_VERSION, else hack/versions.env's default)
pass "e2e.test $(. "$REPO_ROOT/hack/lib.sh" && echo "$KUBERNETES_VERSION") built"

# Spec names are canonical (hack/e2e/specs.py: no [Serial] tag, which 1.35 prints after the
# describe and 1.37 at the end), the same at every version; so are the focus and the report.
SPECS_PY=$REPO_ROOT/hack/e2e/specs.py
mapfile -t specs < <(grep -v '^[[:space:]]*\(#\|$\)' "$SPECS" | python3 "$SPECS_PY" canonical)
[ ${#specs[@]} -gt 0 ] || { fail "spec list $SPECS is not empty"; summary; exit 1; }
# The focus: each listed spec as a literal, with [Serial] allowed where either version puts it.
if ! focus=$(python3 "$SPECS_PY" focus "$SPECS"); then fail "spec list $SPECS gives a focus"; summary; exit 1; fi

t0=$SECONDS
BINDIR=$TAREMA_BIN bash "$REPO_ROOT/hack/e2e-scheduling.sh" compare "$WORK/out" --focus "$focus" \
  >"$WORK/compare.log" 2>&1
echo "# both schedulers ran ${#specs[@]} specs in $((SECONDS - t0)) s"
grep -E '^\[' "$WORK/compare.log" | sed 's/^/# /'
if [ ! -f "$WORK/out/junit-kube.xml" ] || [ ! -f "$WORK/out/junit-tarema.xml" ]; then
  fail "both runs wrote a JUnit report" "$(tail -n 15 "$WORK/compare.log")"
  summary
  exit 1
fi
python3 "$REPO_ROOT/hack/e2e/report.py" --kube "$WORK/out/junit-kube.xml" \
  --tarema "$WORK/out/junit-tarema.xml" --tsv "$WORK/results.tsv" | sed 's/^/# /'

# result SCHEDULER-COLUMN SPEC: that scheduler's result ("not run" when the spec is absent).
result() { awk -F'\t' -v s="$2" -v c="$1" '$1 == s {print $c; f=1} END {if (!f) print "not run"}' "$WORK/results.tsv"; }
for s in "${specs[@]}"; do
  k=$(result 2 "$s")
  t=$(result 3 "$s")
  if [ "$k" = passed ]; then
    pass "kube-scheduler: $s"
  else
    fail "kube-scheduler: $s" "result: $k (the local cluster no longer serves this spec; log: e2e-kube.log)"
  fi
  if [ "$t" = passed ]; then
    pass "tarema: $s"
  elif [ "$k" = passed ]; then
    fail "tarema: $s" "result: $t, kube-scheduler passes it"
    # the spec's lines in tarema's e2e log, from its name (as this version prints it) to the next spec
    RE=$(python3 "$SPECS_PY" pattern "$s") awk '$0 ~ ENVIRON["RE"] {p = 1; next} p && /^\[It\]|^---/ {p = 0} p' \
      "$WORK/out/e2e-tarema.log" | grep -m3 -E 'FAIL|Error|Timed out' | sed 's/^/    /'
  else
    fail "tarema: $s" "result: $t (kube-scheduler: $k)"
  fi
done
summary
