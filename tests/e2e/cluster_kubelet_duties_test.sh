#!/usr/bin/env bash
# tests/e2e/cluster_kubelet_duties_test.sh: what the local cluster does in place of kubelets
# (docs/conformance.md, "What the local cluster adds"), on a tainted node of its own:
#   1. an extended resource put into a node's status.capacity appears in its allocatable (the
#      kwok Stage node-extended-allocatable), with the same quantity, and leaves allocatable when
#      it leaves capacity; cpu, memory and pods stay as they were;
#   2. a pod bound to the node and deleted is removed for good (pod-deleter), and a pod of the
#      same name created right after the delete is not deleted in its place: it runs, with a new
#      UID (pod-deleter deletes with the old pod's UID as a precondition).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"

if [ -z "${KUBECONFIG:-}" ] || [ -z "${TAREMA_CLUSTER_DIR:-}" ]; then
  fail "environment" "KUBECONFIG and TAREMA_CLUSTER_DIR are not set: run via tests/run.sh e2e or eval \"\$(hack/cluster.sh env)\""
  summary
  exit 1
fi
k() { "$K8S_BIN/kubectl" "$@"; } # the cluster version's own kubectl (hack/lib.sh)
ID=$RANDOM
NODE=kd$ID-1
NS=kubelet-duties-$ID
TMP=$(mktemp -d)
cleanup() {
  k delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  k delete node "$NODE" --wait=false >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

cat >"$TMP/nodes.yaml" <<EOF
nodes:
  - {prefix: kd$ID, count: 1, cpu: 4, memory: 8Gi, pods: 110,
     taints: [{key: tarema.io/e2e, value: "kd$ID", effect: NoSchedule}]}
EOF
check "a node of its own" bash "$REPO_ROOT/hack/cluster.sh" nodes "$TMP/nodes.yaml"

# ---- 1. extended resources: capacity -> allocatable ---------------------------------------------
alloc() { k get node "$NODE" -o json | jq -r --arg r "$1" '.status.allocatable[$r] // "absent"'; }
alloc_is() { [ "$(alloc "$1")" = "$2" ]; }
k patch node "$NODE" --subresource=status --type=json \
  -p '[{"op": "add", "path": "/status/capacity/example.com~1widget", "value": "7"}]' >/dev/null
if wait_for 30 alloc_is example.com/widget 7; then
  pass "extended resource example.com/widget=7 in capacity appears in allocatable"
else
  fail "extended resource in capacity appears in allocatable" "allocatable: $(k get node "$NODE" -o jsonpath='{.status.allocatable}')"
fi
if [ "$(alloc cpu)/$(alloc memory)/$(alloc pods)" = "4/8Gi/110" ]; then
  pass "cpu, memory and pods allocatable unchanged"
else
  fail "cpu, memory and pods allocatable unchanged" "allocatable: $(k get node "$NODE" -o jsonpath='{.status.allocatable}')"
fi
k patch node "$NODE" --subresource=status --type=json \
  -p '[{"op": "replace", "path": "/status/capacity/example.com~1widget", "value": "3"}]' >/dev/null
if wait_for 30 alloc_is example.com/widget 3; then pass "a changed capacity (3) is followed"; else fail "a changed capacity (3) is followed" "allocatable: $(alloc example.com/widget)"; fi
k patch node "$NODE" --subresource=status --type=json \
  -p '[{"op": "remove", "path": "/status/capacity/example.com~1widget"}]' >/dev/null
if wait_for 30 alloc_is example.com/widget absent; then
  pass "removed from capacity, removed from allocatable"
else
  fail "removed from capacity, removed from allocatable" "allocatable: $(k get node "$NODE" -o jsonpath='{.status.allocatable}')"
fi

# ---- 2. deleting a pod, and creating one of the same name at once --------------------------------
k create namespace "$NS" >/dev/null
wait_for 30 k get serviceaccount default -n "$NS"
pod() {
  jq -cn --arg ns "$NS" --arg node "$NODE" --arg id "kd$ID" '{apiVersion: "v1", kind: "Pod",
    metadata: {namespace: $ns, name: "same"},
    spec: {nodeName: $node, containers: [{name: "c", image: "pause"}],
           tolerations: [{key: "tarema.io/e2e", operator: "Equal", value: $id, effect: "NoSchedule"}]}}' |
    k create -f - -o jsonpath='{.metadata.uid}'
}
phase_of() { k get pod -n "$NS" same -o jsonpath='{.metadata.uid} {.status.phase}' 2>/dev/null; }
running() { [ "$(phase_of)" = "$1 Running" ]; }
gone() { ! k get pod -n "$NS" same >/dev/null 2>&1; }
uid1=$(pod)
if wait_for 30 running "$uid1"; then pass "a bound pod runs"; else fail "a bound pod runs" "$(phase_of)"; fi
k delete pod -n "$NS" same --wait=false >/dev/null
if wait_for 30 gone; then pass "a deleted bound pod is removed for good"; else fail "a deleted bound pod is removed for good" "$(phase_of)"; fi
# Several rounds of delete + immediate re-create: each new pod must survive the old one's
# deletion.
ok=1
for round in 1 2 3 4 5; do
  uid=$(pod) || { ok=0; echo "    round $round: create failed"; break; }
  wait_for 30 running "$uid" || { ok=0; echo "    round $round: new pod $uid not Running: $(phase_of)"; break; }
  k delete pod -n "$NS" same --wait=false >/dev/null
  # The next create races the old pod's final delete: created as soon as the name is free.
  wait_for 30 gone || { ok=0; echo "    round $round: pod $uid not removed: $(phase_of)"; break; }
done
if [ $ok = 1 ]; then
  uid=$(pod)
  # The new pod still exists, with its own UID, once it has run for a while: nothing deleted it.
  if wait_for 30 running "$uid" && [ "$(k get pod -n "$NS" same -o jsonpath='{.metadata.uid}')" = "$uid" ]; then
    pass "a pod re-created under the same name right after a delete is not deleted in the old one's place (5 rounds)"
  else
    fail "a re-created pod of the same name survives" "$(phase_of)"
  fi
else
  fail "a re-created pod of the same name survives (5 rounds)"
fi
summary
