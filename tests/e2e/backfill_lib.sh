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
