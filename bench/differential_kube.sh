#!/usr/bin/env bash
# bench/differential_kube.sh: the differential test against kube-scheduler at scale (run by
# `make bench`): tests/e2e/scheduler_differential_kube_test.sh over many seeds on a dedicated
# local cluster, BENCH_DIFF_PODS pods in all (10,000 by default, 500 per seed: each seed a new
# random cluster), then the agreement: pods both bound, both Pending, decided differently. A
# disagreement is printed with its reproducer (the test's output) and makes the exit status 1.
# About 0.3 s per pod on the 2-core machine (two schedulers decide each pod in turn).
#   BENCH_DIFF_PODS=10000 BENCH_DIFF_PER_SEED=500 BENCH_DIFF_FIRST_SEED=1000
#   BENCH_DIFF_CLUSTER_NAME=bench-diff   cluster instance (torn down at the end)
#   BENCH=name, BENCH_LIVE=0             as in hack/bench.sh ("differential"; a live benchmark)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../hack/lib.sh"
cd "$REPO_ROOT"
if [ -n "${BENCH:-}" ] && [[ differential_kube != *"$BENCH"* ]]; then exit 0; fi
[ "${BENCH_LIVE:-1}" = 0 ] && exit 0
total=${BENCH_DIFF_PODS:-10000}
per=${BENCH_DIFF_PER_SEED:-500}
seed=${BENCH_DIFF_FIRST_SEED:-1000}
export TAREMA_CLUSTER_NAME=${BENCH_DIFF_CLUSTER_NAME:-bench-diff}
export TAREMA_BIN=${TAREMA_BIN:-$REPO_ROOT/${BINDIR:-bin}}
trap 'bash hack/cluster.sh down >/dev/null 2>&1' EXIT
step "differential against kube-scheduler: starting cluster $TAREMA_CLUSTER_NAME"
bash hack/cluster.sh up >/dev/null || die "cluster $TAREMA_CLUSTER_NAME did not start"
eval "$(bash hack/cluster.sh env)"
done_pods=0 bound=0 pending=0 disagree=0 undecided=0 status=0
t0=$SECONDS
while [ "$done_pods" -lt "$total" ]; do
  n=$((total - done_pods < per ? total - done_pods : per))
  keep=$(mktemp)
  out=$(DIFF_SEED=$seed DIFF_PODS=$n DIFF_KEEP=$keep bash tests/e2e/scheduler_differential_kube_test.sh 2>&1)
  sum=$(grep '"kind": "summary"' "$keep")
  if [ -z "$sum" ]; then
    echo "$out" | tail -n 5 >&2
    rm -f "$keep"
    die "seed $seed: the differential run did not finish"
  fi
  read -r b p d u < <(jq -r '"\(.bound) \(.pending) \(.disagree) \(.undecided)"' <<<"$sum")
  bound=$((bound + b)) pending=$((pending + p)) disagree=$((disagree + d)) undecided=$((undecided + u))
  if [ $((d + u)) -gt 0 ]; then
    grep -A1 '^not ok' <<<"$out"
    status=1
  fi
  rm -f "$keep"
  done_pods=$((done_pods + n)) seed=$((seed + 1))
  step "$done_pods/$total pods: agree $((bound + pending)), disagree $disagree, undecided $undecided ($((SECONDS - t0)) s)"
done
decided=$((bound + pending + disagree + undecided))
printf 'differential_kube  pods %d  both bound %d  both Pending %d  disagree %d  undecided %d  agreement %s%%  (%d s)\n' \
  "$decided" "$bound" "$pending" "$disagree" "$undecided" \
  "$(awk -v a=$((bound + pending)) -v n="$decided" 'BEGIN {printf "%.2f", n ? 100 * a / n : 0}')" $((SECONDS - t0))
exit $status
