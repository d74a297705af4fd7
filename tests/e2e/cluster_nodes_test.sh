#!/usr/bin/env bash
# End-to-end check of `hack/cluster.sh nodes FILE` on the running instance: it adds the file's
# nodes (Ready, with capacity, labels and taints, kept Ready by kwok), is idempotent, and a
# bad node file fails with a message naming the entry and field, creating nothing. The nodes
# it adds are deleted again at the end, so later tests see the original node set.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): counts every node of the cluster
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
KUBECTL=$KUBECTL_BIN
CLUSTER=$REPO_ROOT/hack/cluster.sh
TMP=$(mktemp -d)
PREFIX=e2e-extra-$RANDOM

if [ -z "${KUBECONFIG:-}" ] || [ -z "${TAREMA_CLUSTER_DIR:-}" ]; then
  fail "environment" "KUBECONFIG and TAREMA_CLUSTER_DIR are not set: run via tests/run.sh e2e or eval \"\$(hack/cluster.sh env)\""
  summary
  exit 1
fi
k() { "$KUBECTL" "$@"; }
cleanup() {
  k delete node -l "tarema.io/e2e=$PREFIX" --wait=false >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

before=$(k get nodes -o name | wc -l)
cat >"$TMP/extra.yaml" <<EOF
nodes:
  - prefix: $PREFIX
    count: 3
    cpu: 4
    memory: 8Gi
    pods: 30
    ephemeral-storage: 50Gi
    labels:
      tarema.io/machine-type: extra
      tarema.io/e2e: $PREFIX
    taints:
      - key: tarema.io/extra
        value: "yes"
        effect: PreferNoSchedule
  - prefix: $PREFIX-half
    count: 1
    cpu: 500m
    memory: 1Gi
    labels:
      tarema.io/e2e: $PREFIX
EOF
out=$(bash "$CLUSTER" nodes "$TMP/extra.yaml" 2>&1)
rc=$?
if [ $rc = 0 ]; then pass "cluster.sh nodes FILE succeeds"; else fail "cluster.sh nodes FILE succeeds" "$out"; fi
if grep -q 'nodes Ready 4/4' <<<"$out"; then pass "it reports progress up to 'nodes Ready 4/4'"; else fail "it reports 'nodes Ready 4/4'" "$out"; fi
after=$(k get nodes -o name | wc -l)
if [ "$after" = $((before + 4)) ]; then pass "4 nodes added ($before -> $after)"; else fail "4 nodes added" "$before -> $after"; fi
check "$PREFIX-1..3 have 4 cpu, 8Gi, 30 pods, 50Gi ephemeral storage, the labels and the taint, and are Ready" bash -c "
  '$KUBECTL' get nodes -l tarema.io/machine-type=extra -o json | jq -e '
    (.items | length) == 3 and ([.items[].metadata.name] | sort) == [\"$PREFIX-1\", \"$PREFIX-2\", \"$PREFIX-3\"]
    and all(.items[]; .status.capacity == {cpu: \"4\", memory: \"8Gi\", pods: \"30\", \"ephemeral-storage\": \"50Gi\"}
      and .status.allocatable == .status.capacity
      and .metadata.labels[\"kubernetes.io/hostname\"] == .metadata.name
      and (.spec.taints | map(select(.key == \"tarema.io/extra\")) == [{key: \"tarema.io/extra\", value: \"yes\", effect: \"PreferNoSchedule\"}])
      and any(.status.conditions[]; .type == \"Ready\" and .status == \"True\"))'"
check "$PREFIX-half-1 has 500m cpu and the default 110 pods" bash -c "
  '$KUBECTL' get node '$PREFIX-half-1' -o json | jq -e '.status.capacity.cpu == \"500m\" and .status.capacity.pods == \"110\"'"

out=$(bash "$CLUSTER" nodes "$TMP/extra.yaml" 2>&1)
if [ $? = 0 ] && ! grep -q 'creating' <<<"$out" && [ "$(k get nodes -o name | wc -l)" = "$after" ]; then
  pass "running nodes FILE again creates nothing and succeeds"
else
  fail "running nodes FILE again creates nothing and succeeds" "$out"
fi

# kwok keeps the added nodes alive through their node Lease (what the node lifecycle
# controller watches): it exists, held by kwok, renewed within its 40 s duration.
lease_fresh() {
  k -n kube-node-lease get lease "$PREFIX-1" -o json 2>/dev/null | jq -e --arg n "$PREFIX-1" '
    (.spec.holderIdentity | length) > 0 and .metadata.name == $n and .spec.leaseDurationSeconds == 40
    and (now - (.spec.renewTime | sub("\\.[0-9]+"; "") | fromdateiso8601)) < 40' >/dev/null
}
if wait_for 10 lease_fresh; then
  pass "kwok holds and renews the node Lease of an added node"
else
  fail "kwok holds and renews the node Lease of an added node" "$(k -n kube-node-lease get lease "$PREFIX-1" -o yaml 2>&1 | tail -n 8)"
fi

# Bad files: each fails, names the entry or the problem, and creates no node.
bad() { # name expected-message-regex yaml
  printf '%s\n' "$3" >"$TMP/bad.yaml"
  local msg n0 n1
  n0=$(k get nodes -o name | wc -l)
  msg=$(bash "$CLUSTER" nodes "$TMP/bad.yaml" 2>&1)
  local rc=$?
  n1=$(k get nodes -o name | wc -l)
  if [ $rc != 0 ] && grep -Eq "$2" <<<"$msg" && [ "$n0" = "$n1" ] && ! grep -q 'line [0-9]*: ' <<<"$msg"; then
    pass "bad node file ($1) is refused: $(head -n 1 <<<"$msg")"
  else
    fail "bad node file ($1) is refused with a message matching /$2/ and no node created" "exit $rc, nodes $n0 -> $n1: $msg"
  fi
}
bad "cpu not a number" "nodes\[1\] \(prefix $PREFIX-b\): cpu must be" "nodes:
  - {prefix: $PREFIX-a, count: 1, cpu: 2, memory: 2Gi}
  - {prefix: $PREFIX-b, count: 1, cpu: lots, memory: 2Gi}"
bad "count zero" "nodes\[0\] \(prefix $PREFIX-c\): count must be a positive integer" "nodes:
  - {prefix: $PREFIX-c, count: 0, cpu: 2, memory: 2Gi}"
bad "missing memory" "nodes\[0\].*memory must be a quantity" "nodes:
  - {prefix: $PREFIX-d, count: 1, cpu: 2}"
bad "unknown key" "nodes\[0\].*unknown key\(s\) cores" "nodes:
  - {prefix: $PREFIX-e, count: 1, cores: 2, cpu: 2, memory: 2Gi}"
bad "upper-case prefix" "nodes\[0\].*prefix must be a lower-case DNS label" "nodes:
  - {prefix: Big, count: 1, cpu: 2, memory: 2Gi}"
bad "bad taint effect" "nodes\[0\].*taints must be a list" "nodes:
  - {prefix: $PREFIX-f, count: 1, cpu: 2, memory: 2Gi, taints: [{key: a, value: b, effect: Sometimes}]}"
bad "no nodes key" "top-level key .nodes." "machines: []"
bad "not YAML" "not valid YAML" "nodes: [ {prefix: x"
bad "duplicate prefix" "appear twice" "nodes:
  - {prefix: $PREFIX-g, count: 1, cpu: 2, memory: 2Gi}
  - {prefix: $PREFIX-g, count: 2, cpu: 4, memory: 4Gi}"
rm -f "$TMP/bad.yaml"
msg=$(bash "$CLUSTER" nodes "$TMP/bad.yaml" 2>&1)
if [ $? != 0 ] && grep -q "not found" <<<"$msg"; then pass "a missing node file is named: $msg"; else fail "a missing node file is named" "$msg"; fi

summary
