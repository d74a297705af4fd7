# tests/e2e/backfill_lib.sh: what the backfill e2e tests share (sourced after lib.sh and
# scheduler_lib.sh, once sched_e2e_begin set NS, ID, P and WORK; SET names the test's node set).

# bf_nodes COUNT: COUNT 8-core kwok nodes of this test's own (label tarema.io/e2e-set=$SET, a
# taint only its pods tolerate), created and checked.
bf_nodes() {
  cat >"$WORK/nodes.yaml" <<NODES
nodes:
  - {prefix: $P, count: $1, cpu: 8, memory: 64Gi, pods: 110,
     labels: {tarema.io/e2e-set: "$SET"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
NODES
  check "test node(s) created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
}

# bf_pod SCHED NAME CPU DURATION [LABELS_JSON]: a pod of CPU cores on this test's nodes that kwok
# ends DURATION after it runs (tarema.io/duration), with the same expected duration.
bf_pod() {
  local labels=${5:-}
  [ -n "$labels" ] || labels='{}'
  jq -cn --arg ns "$NS" --arg name "$2" --arg sched "$1" --arg set "$SET" --arg cpu "$3" \
    --arg d "$4" --arg id "$ID" --argjson labels "$labels" '
    {apiVersion: "v1", kind: "Pod",
     metadata: {namespace: $ns, name: $name, labels: $labels,
                annotations: {"tarema.io/duration": $d, "tarema.io/expected-duration": $d}},
     spec: {schedulerName: $sched, nodeSelector: {"tarema.io/e2e-set": $set},
            tolerations: [{key: "tarema.io/e2e", operator: "Equal", value: $id,
                           effect: "NoSchedule"}],
            containers: [{name: "c", image: "busybox",
                          resources: {requests: {cpu: $cpu, memory: "1Gi"}}}]}}'
}

# The namespace's pods (ns_pods), and how many match a jq filter (count_of FILTER).
ns_pods() { read_ok kubectl get pods -n "$NS" -o json; }
count_of() { local j; j=$(ns_pods) || return 1; jq "[.items[] | select($1)] | length" <<<"$j"; }
# A pod's tarema.io/expected-start annotation ("" when none).
expected_start() { kubectl get pod -n "$NS" "$1" -o jsonpath='{.metadata.annotations.tarema\.io/expected-start}' 2>/dev/null; }
has_expected_start() { [ -n "$(expected_start "$1")" ]; }
# RFC 3339 -> epoch seconds (0 when it does not parse).
epoch() { date -u -d "$1" +%s 2>/dev/null || echo 0; }

# bf_extender_begin NAME SHORT [NODES]: the start of a test of backfill in extender mode, with the
# cluster's kube-scheduler as the one that places the pods: sched_e2e_begin NAME SHORT, SET and
# PROFILE (kube-NAME-ID: kube-scheduler's profile, tarema's scheduler name and Lease), a cleanup
# that resumes a kube-scheduler the test paused (KS_PID), stops one it started (STARTED_KS=1)
# and deletes the Lease; then the test's namespace and NODES 8-core nodes (default 1). Ends the
# test when another left kube-scheduler running.
bf_extender_begin() {
  sched_e2e_begin "$1" "$2"
  SET=$2$ID
  PROFILE=kube-$1-$ID
  STARTED_KS=0
  KS_PID=
  extra_cleanup() {
    [ -n "${KS_PID:-}" ] && kill -CONT "$KS_PID" 2>/dev/null
    [ "$STARTED_KS" = 1 ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
    # the replicas' Lease (released at their stop, not deleted)
    kubectl delete lease -n kube-system "$PROFILE" --ignore-not-found >/dev/null 2>&1
    true
  }
  if bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep -E '^ +scheduler +running'; then
    fail "kube-scheduler of this cluster is free for the test" "another test left it running (hack/cluster.sh scheduler stop)"
    summary
    exit 1
  fi
  sched_e2e_namespace
  bf_nodes "${3:-1}"
}

# Pods of kube-scheduler's extender profile (after bf_extender_begin): pod NAME CPU DURATION,
# bound_at NAME (its node, "" while pending), is_bound NAME.
pod() { bf_pod "$PROFILE" "$@"; }
bound_at() { kubectl get pod -n "$NS" "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
is_bound() { [ -n "$(bound_at "$1")" ]; }

# bf_run_then_wide A_CPU A_SECS W_CPU W_SECS MAX_LATE: run-a (A_CPU cores, A_SECS s) is bound,
# then wide (W_CPU cores) waits and gets tarema.io/expected-start at run-a's expected end: A_SECS
# after run-a's bind was seen (T_A), from 5 s before to MAX_LATE s after (kwok starts a pod within
# a second of its bind; a plan's resolution rounds the start up). Sets T_A and es (epoch s).
bf_run_then_wide() {
  pod run-a "$1" "$2s" | kubectl create -f - >/dev/null
  check "run-a ($1 cores, $2 s) is bound" wait_for 60 is_bound run-a
  T_A=$(date +%s)
  pod wide "$3" "$4s" | kubectl create -f - >/dev/null
  check "wide ($3 cores) gets tarema.io/expected-start (its shadow)" wait_for 30 has_expected_start wide
  es=$(epoch "$(expected_start wide)")
  if [ "$es" -ge $((T_A + $2 - 5)) ] && [ "$es" -le $((T_A + $2 + $5)) ]; then
    pass "wide's expected start is run-a's expected end ($(expected_start wide))"
  else
    fail "wide's expected start is run-a's expected end" "expected-start $(expected_start wide), run-a bound at $(date -u -d "@$T_A" +%H:%M:%S)"
  fi
}
