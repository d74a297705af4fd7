#!/usr/bin/env bash
# make bench: runs every benchmark and prints its figures. Benchmarks measure and report; they
# assert nothing about time (targets are read by people, in the figures and in the notes).
#   BENCH=name   run only benchmarks whose name contains `name`
#   BENCH_LIVE=0 skip the live scheduler benchmark against kube-scheduler (minutes long)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
O=${O:-build}
filter=${BENCH:-}
status=0
for b in "$O"/bench/*_bench; do
  [ -x "$b" ] || continue
  name=$(basename "$b")
  [ -n "$filter" ] && [[ $name != *"$filter"* ]] && continue
  step "benchmark $name"
  if ! "$b"; then
    echo "benchmark $name failed" >&2
    status=1
  fi
done
if [ "${BENCH_LIVE:-1}" != 0 ] && [ -x hack/bench-scheduler.sh ] && { [ -z "$filter" ] || [[ scheduler-live == *"$filter"* ]]; }; then
  step "benchmark scheduler-live: tarema-scheduler against kube-scheduler on kwok nodes"
  bash hack/bench-scheduler.sh || status=1
fi
exit $status
