#!/usr/bin/env bash
# End-to-end check of the local control plane from hack/cluster.sh, run by tests/run.sh e2e
# against the instance it started (KUBECONFIG, TAREMA_CLUSTER_DIR exported): the API answers
# to the admin kubeconfig, the node file's nodes are Ready with their capacity, labels and
# taints, kwok plays a bound pod through Running to Succeeded after its tarema.io/duration,
# TokenRequest issues tokens that authenticate, and kube-controller-manager creates the
# default ServiceAccount of a new namespace.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): checks every node for the not-ready taint; binds straight to a paper node
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
KUBECTL=$KUBECTL_BIN
NODES_FILE=${TAREMA_NODES:-$REPO_ROOT/tests/fixtures/nodes/paper-5442.yaml}
NS=e2e-cp-$$-$RANDOM

if [ -z "${KUBECONFIG:-}" ] || [ -z "${TAREMA_CLUSTER_DIR:-}" ]; then
  fail "environment" "KUBECONFIG and TAREMA_CLUSTER_DIR are not set: run via tests/run.sh e2e or eval \"\$(hack/cluster.sh env)\""
  summary
  exit 1
fi
PKI=$TAREMA_CLUSTER_DIR/pki
k() { "$KUBECTL" "$@"; }
cleanup() { k delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

# ---- the API answers with the admin kubeconfig, as a cluster admin
check "API /readyz answers with the admin kubeconfig" bash -c "[ \"\$('$KUBECTL' get --raw /readyz)\" = ok ]"
check "admin may do anything (system:masters)" bash -c "[ \"\$('$KUBECTL' auth can-i '*' '*' --all-namespaces)\" = yes ]"
check "API serves Kubernetes $KUBERNETES_VERSION" bash -c "'$KUBECTL' version -o json | jq -e --arg v '$KUBERNETES_VERSION' '.serverVersion.gitVersion == \$v'"

# ---- every node of the node file exists, Ready, with its capacity, labels and taints. The
# expectation is computed from the file here, independently of hack/cluster.sh.
expected=$(python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$NODES_FILE")
nodes_json=$(k get nodes -o json)
missing=0 wrong=()
while IFS=$'\t' read -r name cpu mem pods labels taints; do
  node=$(jq -c --arg n "$name" '.items[] | select(.metadata.name == $n)' <<<"$nodes_json")
  if [ -z "$node" ]; then missing=$((missing + 1)); wrong+=("$name missing"); continue; fi
  jq -e --arg cpu "$cpu" --arg mem "$mem" --arg pods "$pods" --argjson labels "$labels" --argjson taints "$taints" '
    .status.capacity.cpu == $cpu and .status.capacity.memory == $mem and .status.capacity.pods == $pods
    and .status.allocatable.cpu == $cpu and .status.allocatable.memory == $mem
    and (.metadata.labels as $have | all($labels | to_entries[]; $have[.key] == .value))
    and (((.spec.taints // []) | map(select(.key | startswith("node.kubernetes.io/") | not)) | map({key, value: (.value // ""), effect}) | sort_by(.key))
         == ($taints | map({key, value: (.value // "" | tostring), effect}) | sort_by(.key)))
    and any(.status.conditions[]; .type == "Ready" and .status == "True")' <<<"$node" >/dev/null ||
    wrong+=("$name: capacity $(jq -c '.status.capacity' <<<"$node") labels $(jq -c '.metadata.labels' <<<"$node") taints $(jq -c '.spec.taints' <<<"$node"), want cpu=$cpu memory=$mem pods=$pods labels=$labels taints=$taints")
done < <(jq -r '.nodes[] | . as $e | range(1; .count + 1) |
  ["\($e.prefix)-\(.)", ($e.cpu | tostring), $e.memory, (($e.pods // 110) | tostring),
   (($e.labels // {}) | map_values(tostring) | tojson), (($e.taints // []) | tojson)] | @tsv' <<<"$expected")
want=$(jq '[.nodes[].count] | add' <<<"$expected")
if [ ${#wrong[@]} -eq 0 ]; then
  pass "all $want nodes of $(basename "$NODES_FILE") exist, Ready, with their capacity, labels and taints"
else
  fail "nodes of $(basename "$NODES_FILE") as in the file ($missing of $want missing)" "$(printf '%s\n' "${wrong[@]}" | head -n 5)"
fi
check "nodes carry no not-ready taint (the node lifecycle controller lifted it)" bash -c \
  "'$KUBECTL' get nodes -o json | jq -e '[.items[].spec.taints[]? | select(.key == \"node.kubernetes.io/not-ready\")] | length == 0'"

# ---- kube-controller-manager gives a new namespace its default ServiceAccount
check "create namespace $NS" k create namespace "$NS"
if wait_for 30 k -n "$NS" get serviceaccount default; then
  pass "kube-controller-manager created ServiceAccount default in a new namespace"
else
  fail "kube-controller-manager created ServiceAccount default in a new namespace" "none after 30 s"
fi

# ---- a pod bound through the binding subresource: Running with an IP, then Succeeded after
# tarema.io/duration; a pod without the annotation keeps running; deletion removes pods.
node=$(jq -r '.nodes[0].prefix + "-1"' <<<"$expected")
pod_manifest() { # name [duration]
  jq -n --arg name "$1" --arg d "${2:-}" '{apiVersion: "v1", kind: "Pod",
    metadata: ({name: $name} + (if $d != "" then {annotations: {"tarema.io/duration": $d}} else {} end)),
    spec: {schedulerName: "e2e-nobody", containers: [{name: "main", image: "busybox",
      resources: {requests: {cpu: "100m", memory: "64Mi"}}}]}}'
}
bind() { # pod node
  curl -sS --fail-with-body --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    -H 'Content-Type: application/json' -X POST \
    "$TAREMA_APISERVER_URL/api/v1/namespaces/$NS/pods/$1/binding" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"$1\"},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"$2\"}}"
}
phase() { k -n "$NS" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
is_phase() { [ "$(phase "$1")" = "$2" ]; }

pod_manifest timed 2s | k -n "$NS" create -f - >/dev/null
pod_manifest forever | k -n "$NS" create -f - >/dev/null
check "bind pod 'timed' to $node via the binding subresource" bind timed "$node"
check "bind pod 'forever' to $node via the binding subresource" bind forever "$node"
t_bound=$(date +%s.%N)
if wait_for 15 is_phase timed Running; then
  t_running=$(date +%s.%N)
  pass "bound pod goes Running ($(awk -v a="$t_bound" -v b="$t_running" 'BEGIN { printf "%.1f", b - a }') s after binding)"
  check "running pod has a pod IP and is on $node" bash -c \
    "'$KUBECTL' -n '$NS' get pod timed -o json | jq -e --arg n '$node' '(.status.podIP | test(\"^[0-9.]+$\")) and .spec.nodeName == \$n'"
  if wait_for 15 is_phase timed Succeeded; then
    t_done=$(date +%s.%N)
    took=$(awk -v a="$t_running" -v b="$t_done" 'BEGIN { printf "%.2f", b - a }')
    # Timed by the API's own times, not by this test's polls (both ends of a poll-observed span
    # carry the 0.2 s polling plus a kubectl round trip each, seconds under load):
    # state.terminated.startedAt (kwok's Running, = status.startTime) to finishedAt (kwok's
    # Succeeded), whole seconds. kwok starts the 2 s delay once it sees the pod Running, so the
    # span is >= 2 s and floors to >= 2; up to 4 allows kwok's watch latency under load. A
    # duration ignored (0 s) gives 0 or 1, a misread one (2m, 20 s) far more.
    span=$(k -n "$NS" get pod timed -o json | jq -r '.status.containerStatuses[0].state.terminated |
      ((.finishedAt[0:19] + "Z" | fromdateiso8601) - (.startedAt[0:19] + "Z" | fromdateiso8601))' 2>/dev/null)
    if [ -n "$span" ] && [ "$span" -ge 2 ] && [ "$span" -le 4 ]; then
      pass "pod with tarema.io/duration=2s Succeeded $span s after it started (startedAt -> finishedAt; polled: $took s)"
    else
      fail "pod with tarema.io/duration=2s Succeeded about 2 s after it started" "startedAt -> finishedAt ${span:-?} s (polled: $took s): $(k -n "$NS" get pod timed -o jsonpath='{.status.containerStatuses[0].state.terminated}')"
    fi
    check "succeeded pod reports its container terminated with exit code 0" bash -c \
      "'$KUBECTL' -n '$NS' get pod timed -o json | jq -e '.status.containerStatuses[0].state.terminated.exitCode == 0'"
  else
    fail "pod with tarema.io/duration=2s goes Succeeded" "phase is $(phase timed) after 15 s"
  fi
else
  fail "bound pod goes Running" "phase is $(phase timed) after 15 s"
fi
check "pod without tarema.io/duration is still Running" is_phase forever Running
check "delete both pods" k -n "$NS" delete pod timed forever --wait=false
gone() { [ -z "$(k -n "$NS" get pods -o name 2>/dev/null)" ]; }
if wait_for 20 gone; then pass "deleted pods are removed by kwok"; else fail "deleted pods are removed by kwok" "$(k -n "$NS" get pods 2>&1)"; fi

# ---- TokenRequest: a token for a ServiceAccount that the apiserver then authenticates
check "create ServiceAccount probe" k -n "$NS" create serviceaccount probe
token=$(k -n "$NS" create token probe --duration=10m 2>&1)
if [ -n "$token" ] && [ "${token#ey}" != "$token" ]; then
  pass "TokenRequest returns a token for ServiceAccount probe"
  who=$(curl -sS --cacert "$PKI/ca.crt" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -X POST "$TAREMA_APISERVER_URL/apis/authentication.k8s.io/v1/selfsubjectreviews" \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' | jq -r '.status.userInfo.username' 2>&1)
  if [ "$who" = "system:serviceaccount:$NS:probe" ]; then
    pass "the token authenticates as system:serviceaccount:$NS:probe"
  else
    fail "the token authenticates as the ServiceAccount" "apiserver says: $who"
  fi
  code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$PKI/ca.crt" -H "Authorization: Bearer ${token}x" \
    "$TAREMA_APISERVER_URL/api/v1/namespaces/$NS/pods")
  if [ "$code" = 401 ]; then pass "a tampered token is rejected (401)"; else fail "a tampered token is rejected" "HTTP $code"; fi
else
  fail "TokenRequest returns a token for ServiceAccount probe" "$token"
fi

summary
