#!/usr/bin/env bash
# tests/e2e/scheduler_extended_resources_test.sh: a node advertising more distinct extended
# resources than tarema has fixed slots for (issue 30: any number of them). One kwok node of its
# own gets 64 extended resources in status.capacity (the kwok Stage copies them to allocatable),
# more than the 60 fixed slots of a snapshot; the rest are kept sparsely:
#   1. a plain pod is bound to that node (before issue 30 the node was dropped from the snapshot);
#   2. a pod asking for one with a fixed slot is bound there too;
#   3. a pod asking for 1 of one kept sparsely (the scheduler logs which) is bound there; one
#      asking for 4 more of it stays Pending, its FailedScheduling event saying "Insufficient"
#      and naming the resource (4 on the node, 1 in use);
#   4. the log line is written once per name, not once per event (the node is changed again).
# e2e-run: alone: it adds 64 extended resource names to the cluster, which would push the
# resources of tests running beside it past the fixed slots of their schedulers.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin extres xr
command -v jq >/dev/null || { fail "jq in PATH"; summary; exit 1; }
sched_e2e_namespace

cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}n, count: 1, cpu: 8, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e-extres: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "a node of its own" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
NODE=${P}n-1
PATCH=$(jq -cn --arg id "$ID" '[range(0; 64) | {op: "add", path: "/status/capacity/example.com~1x\($id)-\(. | tostring)", value: "4"}]')
kubectl patch node "$NODE" --subresource=status --type=json -p "$PATCH" >/dev/null
n_ext() { kubectl get node "$NODE" -o json | jq --arg id "$ID" '[.status.allocatable | keys[] | select(startswith("example.com/x" + $id))] | length'; }
ext_is_64() { [ "$(n_ext)" = 64 ]; }
check "64 extended resources in the node's allocatable" wait_for 30 ext_is_64
sched_e2e_start --policy tarema

# pod NAME [RESOURCE]: 100m/64Mi on this test's node, and 1 of RESOURCE when given (an extended
# resource needs a limit, equal to the request).
pod() {
  pod_json "$NS" "$1" "$SCHED" 100m 64Mi '{}' "$ID" |
    jq -c --arg id "$ID" --arg r "${2:-}" '
      .spec.nodeSelector = {"tarema.io/e2e-extres": $id}
      | if $r != "" then .spec.containers[0].resources.requests[$r] = "1"
                       | .spec.containers[0].resources.limits[$r] = "1" else . end' |
    kubectl create -f - >/dev/null
}
on_node() { [ "$(pod_node "$NS" "$1")" = "$NODE" ]; }

# ---- 1. the node is kept -------------------------------------------------------------------------
pod plain
if wait_for 60 on_node plain; then pass "a plain pod is bound to the node with 64 extended resources"; else fail "a plain pod is bound to the node" "events: $(notes plain)"; fi

# which of this node's names the scheduler keeps sparsely (it says so in its log)
sparse() { sed -n "s/.*resource kept sparsely name=\"\(example.com\/x$ID-[0-9]*\)\".*/\1/p" "$WORK/sched.log"; }
some_sparse() { [ -n "$(sparse)" ]; }
check "the scheduler logs the names it keeps sparsely" wait_for 30 some_sparse
U=$(sparse | head -n 1)
T=
for i in $(seq 0 63); do
  r=example.com/x$ID-$i
  sparse | grep -qxF "$r" || { T=$r; break; }
done

# ---- 2. one with a fixed slot is scheduled on ---------------------------------------------------
pod tracked "$T"
if wait_for 60 on_node tracked; then pass "a pod asking for one with a fixed slot ($T) is bound there"; else fail "a pod asking for one with a fixed slot is bound" "events: $(notes tracked)"; fi

# ---- 3. one kept sparsely: counted like the others ----------------------------------------------
pod asks-sparse "$U"
if wait_for 60 on_node asks-sparse; then pass "a pod asking for 1 of one kept sparsely ($U) is bound there"; else fail "a pod asking for one kept sparsely is bound" "events: $(notes asks-sparse)"; fi
pod_json "$NS" asks-too-much "$SCHED" 100m 64Mi '{}' "$ID" |
  jq -c --arg id "$ID" --arg r "$U" '.spec.nodeSelector = {"tarema.io/e2e-extres": $id}
    | .spec.containers[0].resources.requests[$r] = "4" | .spec.containers[0].resources.limits[$r] = "4"' |
  kubectl create -f - >/dev/null
RE="Insufficient ${U//./\\.}"
if wait_for 60 failed_event asks-too-much "$RE" && [ -z "$(pod_node "$NS" asks-too-much)" ]; then
  pass "a pod asking for 4 more of it (3 left) stays Pending: Insufficient $U"
else
  fail "a pod asking for more of it than is left stays Pending" "node '$(pod_node "$NS" asks-too-much)'; events: $(notes asks-too-much)"
fi

# ---- 4. one log line per name ------------------------------------------------------------------
kubectl label node "$NODE" tarema.io/e2e-extres-touch=1 >/dev/null # a relevant node change
touched() { kubectl get node "$NODE" -o jsonpath='{.metadata.labels.tarema\.io/e2e-extres-touch}' | grep -qx 1; }
wait_for 30 touched
# a pod selecting the new label: bound only once the scheduler has seen the node change
pod_json "$NS" after-touch "$SCHED" 100m 64Mi '{}' "$ID" |
  jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e-extres": $id, "tarema.io/e2e-extres-touch": "1"}' |
  kubectl create -f - >/dev/null
check "a pod selecting the changed node's new label is bound" wait_for 60 on_node after-touch
count=$(grep -c "resource kept sparsely name=\"${U}\"" "$WORK/sched.log")
if [ "$count" = 1 ]; then pass "one log line for $U, however many events name it"; else fail "one log line per name" "$count lines for $U"; fi

summary
