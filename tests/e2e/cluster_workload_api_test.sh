#!/usr/bin/env bash
# tests/e2e/cluster_workload_api_test.sh: `hack/cluster.sh up --workload-api` turns on
# Kubernetes 1.35's Workload API on the test instance and kube-scheduler's GangScheduling:
#  1. the API server serves scheduling.k8s.io/v1alpha1 workloads (kubectl api-resources), a
#     Workload with a gang and a basic pod group round-trips unchanged, invalid ones (minCount
#     0) are refused, and a pod's spec.workloadRef is kept (without the GenericWorkload gate the
#     API server silently drops it);
#  2. `hack/cluster.sh env` says so (TAREMA_WORKLOAD_API=1) and an `up` without the option
#     keeps it;
#  3. kube-scheduler started by `hack/cluster.sh scheduler start` runs with the gates (its
#     command line, its log's alpha-feature warning) and its GangScheduling plugin acts: two
#     pods of a gang of minCount 3 stay unbound, the third lets all three bind.
# The instance run by tests/run.sh may have been brought up without the option: then this test
# runs `up --workload-api` on it, which restarts the API server with the gates (the path a user
# takes on an instance already up).
# e2e-run: alone (tests/run.sh runs it with no other test beside it): re-runs cluster.sh up on the shared instance and needs kube-scheduler stopped
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
KUBECTL=$KUBECTL_BIN
ID=$(printf '%05d' $((RANDOM % 100000)))
NS=e2e-wl-$ID
SCHED=wl-e2e-$ID
WORK=$(mktemp -d)
STARTED_KS=0
k() { "$KUBECTL" "$@"; }
cleanup() {
  [ "$STARTED_KS" = 1 ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  k delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "${KUBECONFIG:-}" ] || [ -z "${TAREMA_CLUSTER_DIR:-}" ]; then
  fail "environment" "KUBECONFIG and TAREMA_CLUSTER_DIR are not set: run via tests/run.sh e2e or eval \"\$(hack/cluster.sh env)\""
  summary
  exit 1
fi

# What it checks is 1.35's alpha API (v1alpha1, spec.workloadRef, the GangScheduling gate);
# 1.36+ serve PodGroups instead, which tests/e2e/gang_native_test.sh checks end to end.
if [ "$KUBERNETES_MINOR" -ge 36 ]; then
  echo "skipped: Kubernetes $KUBERNETES_VERSION has no scheduling.k8s.io/v1alpha1 Workload API (see gang_native_test.sh)"
  summary
  exit 0
fi

# ---- up --workload-api (on the running instance when it does not have it yet)
if bash "$REPO_ROOT/hack/cluster.sh" up --workload-api --nodes "${TAREMA_NODES:-$REPO_ROOT/tests/fixtures/nodes/paper-5442.yaml}" >"$WORK/up.out" 2>&1; then
  pass "hack/cluster.sh up --workload-api succeeds"
else
  fail "hack/cluster.sh up --workload-api succeeds" "$(tail -n 8 "$WORK/up.out")"
  summary
  exit 1
fi
eval "$(bash "$REPO_ROOT/hack/cluster.sh" env)"
if [ "${TAREMA_WORKLOAD_API:-}" = 1 ]; then pass "env exports TAREMA_WORKLOAD_API=1"; else fail "env exports TAREMA_WORKLOAD_API=1" "$(bash "$REPO_ROOT/hack/cluster.sh" env)"; fi

# ---- 1. the API
if k api-resources --api-group=scheduling.k8s.io -o name 2>&1 | qgrep -x 'workloads.scheduling.k8s.io'; then
  pass "kubectl api-resources lists workloads.scheduling.k8s.io"
else
  fail "kubectl api-resources lists workloads.scheduling.k8s.io" "$(k api-resources --api-group=scheduling.k8s.io 2>&1)"
fi
if k api-versions | qgrep -x 'scheduling.k8s.io/v1alpha1'; then pass "scheduling.k8s.io/v1alpha1 served"; else fail "scheduling.k8s.io/v1alpha1 served" "$(k api-versions | grep scheduling)"; fi
k create namespace "$NS" >/dev/null
wait_for 30 k get serviceaccount default -n "$NS"

workload='{"apiVersion":"scheduling.k8s.io/v1alpha1","kind":"Workload","metadata":{"name":"train","namespace":"'"$NS"'"},
 "spec":{"podGroups":[{"name":"workers","policy":{"gang":{"minCount":3}}},{"name":"driver","policy":{"basic":{}}}]}}'
if out=$(k create -f - -o json <<<"$workload" 2>&1) && back=$(k get workload -n "$NS" train -o json 2>&1) &&
  jq -e --argjson want "$(jq .spec <<<"$workload")" '.spec == $want' <<<"$back" >/dev/null; then
  pass "a Workload (gang minCount 3 + basic group) round-trips unchanged"
else
  fail "a Workload (gang minCount 3 + basic group) round-trips unchanged" "${back:-$out}"
fi
bad=$(jq -c '.metadata.name = "bad" | .spec.podGroups[0].policy.gang.minCount = 0' <<<"$workload")
if out=$(k create -f - <<<"$bad" 2>&1); then
  fail "a Workload with gang minCount 0 is refused" "created: $out"
elif grep -q 'minCount' <<<"$out"; then pass "a Workload with gang minCount 0 is refused, naming minCount"; else fail "a Workload with gang minCount 0 is refused, naming minCount" "$out"; fi

# gang_pod NAME: a pod of pod group `workers` of Workload `train`, for scheduler $SCHED
gang_pod() {
  jq -cn --arg ns "$NS" --arg n "$1" --arg s "$SCHED" '
    {apiVersion: "v1", kind: "Pod", metadata: {namespace: $ns, name: $n},
     spec: {schedulerName: $s, workloadRef: {name: "train", podGroup: "workers"},
            containers: [{name: "c", image: "busybox", resources: {requests: {cpu: "100m", memory: "64Mi"}}}]}}'
}
gang_pod w-1 | k create -f - >/dev/null 2>&1
ref=$(k get pod -n "$NS" w-1 -o jsonpath='{.spec.workloadRef.name}/{.spec.workloadRef.podGroup}' 2>&1)
if [ "$ref" = train/workers ]; then pass "a pod's spec.workloadRef is kept (train/workers)"; else fail "a pod's spec.workloadRef is kept" "got '$ref'"; fi

# ---- 2. an up without the option keeps it
if bash "$REPO_ROOT/hack/cluster.sh" up --nodes "${TAREMA_NODES:-$REPO_ROOT/tests/fixtures/nodes/paper-5442.yaml}" >"$WORK/up2.out" 2>&1 &&
  k api-resources --api-group=scheduling.k8s.io -o name | qgrep -x 'workloads.scheduling.k8s.io' &&
  ! grep -q 'restarting apiserver' "$WORK/up2.out"; then
  pass "a later up without --workload-api keeps it (no restart)"
else
  fail "a later up without --workload-api keeps it (no restart)" "$(tail -n 5 "$WORK/up2.out")"
fi

# ---- 3. kube-scheduler with GangScheduling
if bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep 'scheduler.*running (pid'; then
  fail "kube-scheduler of this cluster is free for the test" "another test left it running (hack/cluster.sh scheduler stop)"
  summary
  exit 1
fi
cat >"$WORK/ks.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: $SCHED
EOF
if bash "$REPO_ROOT/hack/cluster.sh" scheduler start "$WORK/ks.yaml" >"$WORK/ks.out" 2>&1; then
  STARTED_KS=1
  pass "kube-scheduler starts on the instance"
else
  fail "kube-scheduler starts on the instance" "$(tail -n 5 "$WORK/ks.out")"
  summary
  exit 1
fi
pid=$(cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid")
if tr '\0' '\n' <"/proc/$pid/cmdline" | qgrep -x -- '--feature-gates=GenericWorkload=true,GangScheduling=true'; then
  pass "kube-scheduler runs with --feature-gates=GenericWorkload=true,GangScheduling=true"
else
  fail "kube-scheduler runs with the GenericWorkload and GangScheduling gates" "$(tr '\0' ' ' <"/proc/$pid/cmdline")"
fi
# The log of this start only (the file collects every start of the instance).
this_start() { awk '/^--- .* start: /{buf=""} {buf = buf $0 "\n"} END {printf "%s", buf}' "$TAREMA_CLUSTER_DIR/logs/scheduler.log"; }
# The gates are printed in map order ("features=[GangScheduling GenericWorkload]" or the other way).
if this_start | grep 'alpha features enabled' | grep 'GenericWorkload' | qgrep 'GangScheduling'; then
  pass "kube-scheduler's log confirms the alpha gates GenericWorkload and GangScheduling"
else
  fail "kube-scheduler's log confirms the alpha gates" "$(this_start | head -n 5)"
fi
# w-1 exists; add w-2: two of minCount 3 must stay unbound (PreEnqueue holds them).
gang_pod w-2 | k create -f - >/dev/null
# bound: how many pods of NS are bound; nothing and status 1 when the list fails.
bound() { read_jq '[.items[] | select(.spec.nodeName // "" | length > 0)] | length' k get pods -n "$NS" -o json; }
none_bound() { [ "$(bound)" = 0 ]; }
# Nothing closes "held": none bound at every poll for 4 s.
if always_for 4 none_bound; then pass "2 pods of a gang of minCount 3: none bound (GangScheduling holds them)"; else fail "2 pods of a gang of minCount 3: none bound" "not 0 at every poll for 4 s; now: $(bound 2>&1) bound"; fi
gang_pod w-3 | k create -f - >/dev/null
all3() { [ "$(bound)" = 3 ]; }
if wait_for 30 all3; then pass "the third pod completes the gang: all 3 bound"; else fail "the third pod completes the gang: all 3 bound" "$(bound) bound; $(this_start | tail -n 3)"; fi
summary
