#!/usr/bin/env bash
# tests/e2e/scheduler_volumes_test.sh: volumes as kube-scheduler's volume plugins handle them
# (issue 30), each case run under the real kube-scheduler (pods k-*) and under
# tarema-scheduler --policy tarema (pods t-*) on two kwok nodes of this test's own, zones za
# and zb, on the same local cluster, and the outcomes compared:
#   1. WaitForFirstConsumer, dynamic (the local cluster's provisioner tarema.local/hostpath,
#      hack/cluster.sh provisioner start): the scheduler writes volume.kubernetes.io/selected-node,
#      the provisioner creates the PV on that node, the PV binder binds the claim, and only then
#      is the pod bound, to the selected node; the same for a generic ephemeral volume, whose
#      claim kube-controller-manager's ephemeral volume controller creates;
#   2. WaitForFirstConsumer, static: the only fitting PVs have node affinity to the zb node: the
#      claim is bound to one of them and the pod to that node;
#   3. ReadWriteOncePod: a second pod on a claim a first pod uses stays Pending, with
#      kube-scheduler's reason;
#   4. VolumeZone: a PV labelled zone zb puts its pod on the zb node; a PV of zone zc leaves the
#      pod Pending ("no available volume zone");
#   5. NodeVolumeLimits: a CSINode allowing one volume of a driver on the zb node: a second pod
#      with another volume of that driver stays Pending ("exceed max volume count");
#   6. PreBind timeout (tarema only, volumeBindTimeoutSeconds 5; kube-scheduler waits 600 s): a
#      claim whose provisioner does not exist gets the pod requeued with a FailedScheduling
#      "running PreBind plugin "VolumeBinding"" event, unbound, the annotation taken back.
# A Pending pod is checked only once its scheduler reported it (FailedScheduling event).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin volumes sv
KS_STARTED=
extra_cleanup() {
  kubectl delete storageclass "sc-dyn-$ID" "sc-local-$ID" "sc-none-$ID" --wait=false >/dev/null 2>&1
  kubectl delete csinode "$ZB" --wait=false >/dev/null 2>&1
  kubectl get pv -o name 2>/dev/null | grep -e "-$ID\$" | xargs -r kubectl delete --wait=false >/dev/null 2>&1
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  return 0
}
command -v jq >/dev/null || { fail "jq in PATH"; summary; exit 1; }
sched_e2e_namespace
kube_scheduler_up
# The provisioner stays up after the test (cheap, and other runs reuse it).
check "the local cluster's provisioner runs" bash "$REPO_ROOT/hack/cluster.sh" provisioner start

ZA=${P}a-1
ZB=${P}b-1
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}a, count: 1, cpu: 8, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e-volumes: "$ID", topology.kubernetes.io/zone: "za-$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}b, count: 1, cpu: 8, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e-volumes: "$ID", topology.kubernetes.io/zone: "zb-$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "two nodes in zones za and zb created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
echo "volumeBindTimeoutSeconds: 5" >"$WORK/tarema.yaml"
sched_e2e_start --policy tarema --config "$WORK/tarema.yaml"

KS=default-scheduler
# pod NAME SCHEDULER CLAIM: a pod (100m) on this test's nodes mounting CLAIM.
pod() {
  pod_json "$NS" "$1" "$2" 100m 64Mi '{}' "$ID" |
    jq -c --arg id "$ID" --arg claim "$3" '
      .spec.nodeSelector = {"tarema.io/e2e-volumes": $id}
      | .spec.volumes = [{name: "data", persistentVolumeClaim: {claimName: $claim}}]
      | .spec.containers[0].volumeMounts = [{name: "data", mountPath: "/data"}]' |
    kubectl create -f - >/dev/null
}
# claim NAME CLASS MODE [VOLUME]: a 1Gi claim (VOLUME: pre-bound to that PV).
claim() {
  jq -cn --arg ns "$NS" --arg n "$1" --arg c "$2" --arg m "$3" --arg v "${4:-}" '
    {apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: {namespace: $ns, name: $n},
     spec: {storageClassName: $c, accessModes: [$m], resources: {requests: {storage: "1Gi"}}}}
    | if $v != "" then .spec.volumeName = $v else . end' | kubectl create -f - >/dev/null
}
# pv NAME CLASS MODE NODE ZONE [CLAIM]: a 1Gi hostPath PV, node affinity to NODE ("" none),
# labelled zone ZONE ("" none), pre-bound to CLAIM.
pv() {
  jq -cn --arg n "$1" --arg c "$2" --arg m "$3" --arg node "$4" --arg z "$5" --arg claim "${6:-}" \
    --arg ns "$NS" '
    {apiVersion: "v1", kind: "PersistentVolume", metadata: {name: $n},
     spec: {storageClassName: $c, accessModes: [$m], capacity: {storage: "1Gi"},
            hostPath: {path: ("/tmp/" + $n)}, persistentVolumeReclaimPolicy: "Retain"}}
    | if $node != "" then .spec.nodeAffinity = {required: {nodeSelectorTerms: [{matchExpressions:
        [{key: "kubernetes.io/hostname", operator: "In", values: [$node]}]}]}} else . end
    | if $z != "" then .metadata.labels = {"topology.kubernetes.io/zone": $z} else . end
    | if $claim != "" then .spec.claimRef = {namespace: $ns, name: $claim} else . end' |
    kubectl create -f - >/dev/null
}
bound() { [ -n "$(pod_node "$NS" "$1")" ]; }
claim_phase() { kubectl get pvc -n "$NS" "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
claim_bound() { [ "$(claim_phase "$1")" = Bound ]; }
selected_node() { kubectl get pvc -n "$NS" "$1" -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}' 2>/dev/null; }
# pending WHAT POD ERE: POD gets a FailedScheduling event matching ERE and is still unbound.
pending() {
  if wait_for 90 failed_event "$2" "$3" && ! bound "$2"; then
    pass "$1"
  else
    fail "$1" "node '$(pod_node "$NS" "$2")'; events: $(notes "$2")"
  fi
}
who() { [ "$1" = k ] && echo "kube-scheduler (reference)" || echo tarema; }
sched_of() { [ "$1" = k ] && echo "$KS" || echo "$SCHED"; }
declare -A OUTCOME

# ---- 1. WaitForFirstConsumer, dynamic provisioning ---------------------------------------------
kubectl create -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-dyn-$ID}
provisioner: tarema.local/hostpath
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
for s in k t; do claim "$s-dyn" "sc-dyn-$ID" ReadWriteOnce; pod "$s-dyn" "$(sched_of $s)" "$s-dyn"; done
dyn_done() { # S: pod bound to the node its claim selected, claim Bound
  bound "$1-dyn" && claim_bound "$1-dyn" && [ "$(selected_node "$1-dyn")" = "$(pod_node "$NS" "$1-dyn")" ]
}
for s in k t; do
  what="$(who $s): WaitForFirstConsumer claim provisioned on the selected node, pod bound there"
  if wait_for 120 dyn_done $s; then
    pass "$what"
    OUTCOME[dyn-$s]=bound
  else
    fail "$what" "node '$(pod_node "$NS" $s-dyn)' selected '$(selected_node $s-dyn)' claim $(claim_phase $s-dyn); $(notes $s-dyn)"
    OUTCOME[dyn-$s]=pending
  fi
done
pvname=$(kubectl get pvc -n "$NS" t-dyn -o jsonpath='{.spec.volumeName}' 2>/dev/null)
aff=$(kubectl get pv "$pvname" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}' 2>/dev/null)
[ -n "$pvname" ] && [ "$aff" = "$(pod_node "$NS" t-dyn)" ] && pass "tarema: the provisioned PV is pinned to the pod's node" ||
  fail "tarema: the provisioned PV is pinned to the pod's node" "pv '$pvname' affinity '$aff'"

# generic ephemeral volume of that class: kube-controller-manager's ephemeral volume controller
# creates the claim <pod>-scratch, the scheduler waits for it, then as above
for s in k t; do
  pod_json "$NS" "$s-eph" "$(sched_of $s)" 100m 64Mi '{}' "$ID" |
    jq -c --arg id "$ID" --arg sc "sc-dyn-$ID" '
      .spec.nodeSelector = {"tarema.io/e2e-volumes": $id}
      | .spec.volumes = [{name: "scratch", ephemeral: {volumeClaimTemplate: {spec: {
          storageClassName: $sc, accessModes: ["ReadWriteOnce"],
          resources: {requests: {storage: "1Gi"}}}}}}]' |
    kubectl create -f - >/dev/null
done
eph_done() { bound "$1-eph" && claim_bound "$1-eph-scratch" && [ "$(selected_node "$1-eph-scratch")" = "$(pod_node "$NS" "$1-eph")" ]; }
for s in k t; do
  what="$(who $s): generic ephemeral volume, its claim created, provisioned on the selected node, pod bound there"
  if wait_for 120 eph_done $s; then
    pass "$what"
    OUTCOME[eph-$s]=bound
  else
    fail "$what" "node '$(pod_node "$NS" $s-eph)' claim $(claim_phase $s-eph-scratch); $(notes $s-eph)"
    OUTCOME[eph-$s]=pending
  fi
done

# ---- 2. WaitForFirstConsumer, static PVs with node affinity -----------------------------------
kubectl create -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-local-$ID}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
EOF
pv "local1-$ID" "sc-local-$ID" ReadWriteOnce "$ZB" ""
pv "local2-$ID" "sc-local-$ID" ReadWriteOnce "$ZB" ""
for s in k t; do claim "$s-static" "sc-local-$ID" ReadWriteOnce; pod "$s-static" "$(sched_of $s)" "$s-static"; done
static_done() { bound "$1-static" && claim_bound "$1-static" && [ "$(pod_node "$NS" "$1-static")" = "$ZB" ]; }
for s in k t; do
  what="$(who $s): WaitForFirstConsumer claim bound to a local PV of node zb, pod bound there"
  if wait_for 90 static_done $s; then
    pass "$what"
    OUTCOME[static-$s]=bound
  else
    fail "$what" "node '$(pod_node "$NS" $s-static)' claim $(claim_phase $s-static); $(notes $s-static)"
    OUTCOME[static-$s]=pending
  fi
done

# ---- 3. ReadWriteOncePod ----------------------------------------------------------------------
for s in k t; do
  pv "rwop-$s-$ID" "" ReadWriteOncePod "" "" "$s-rwop"
  claim "$s-rwop" "" ReadWriteOncePod "rwop-$s-$ID"
done
wait_for 60 claim_bound k-rwop && wait_for 60 claim_bound t-rwop &&
  pass "the ReadWriteOncePod claims are bound (PV binder)" || fail "the ReadWriteOncePod claims are bound (PV binder)"
for s in k t; do
  pod "$s-rwop-1" "$(sched_of $s)" "$s-rwop"
  if wait_for 60 bound "$s-rwop-1"; then pass "$(who $s): first pod on a ReadWriteOncePod claim bound"; else fail "$(who $s): first pod on a ReadWriteOncePod claim bound" "$(notes $s-rwop-1)"; fi
  pod "$s-rwop-2" "$(sched_of $s)" "$s-rwop"
done
RWOP='node\(s\) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod'
pending "kube-scheduler (reference): second pod on the ReadWriteOncePod claim, Pending" k-rwop-2 "$RWOP"
pending "tarema: second pod on the ReadWriteOncePod claim, Pending with kube-scheduler's reason" t-rwop-2 "$RWOP"

# ---- 4. VolumeZone ----------------------------------------------------------------------------
for s in k t; do
  pv "zb-$s-$ID" "" ReadWriteOnce "" "zb-$ID" "$s-zb"
  claim "$s-zb" "" ReadWriteOnce "zb-$s-$ID"
  pv "zc-$s-$ID" "" ReadWriteOnce "" "zc-$ID" "$s-zc"
  claim "$s-zc" "" ReadWriteOnce "zc-$s-$ID"
done
for c in k-zb t-zb k-zc t-zc; do wait_for 60 claim_bound $c || fail "claim $c bound (PV binder)"; done
for s in k t; do
  pod "$s-zb" "$(sched_of $s)" "$s-zb"
  pod "$s-zc" "$(sched_of $s)" "$s-zc"
done
for s in k t; do
  on_zb() { bound "$1-zb" && [ "$(pod_node "$NS" "$1-zb")" = "$ZB" ]; }
  if wait_for 60 on_zb $s; then pass "$(who $s): a PV of zone zb puts its pod on the zb node"; else fail "$(who $s): a PV of zone zb puts its pod on the zb node" "node '$(pod_node "$NS" $s-zb)'; $(notes $s-zb)"; fi
done
pending "kube-scheduler (reference): a PV of zone zc, no such node, Pending" k-zc 'no available volume zone'
pending "tarema: a PV of zone zc, no such node, Pending with kube-scheduler's reason" t-zc 'no available volume zone'

# ---- 5. NodeVolumeLimits: CSINode allows one volume of the driver on the zb node ---------------
kubectl create -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: $ZB}
spec: {drivers: [{name: e2e-$ID.csi.tarema.local, nodeID: $ZB, allocatable: {count: 1}}]}
EOF
for s in k t; do
  for i in 1 2; do
    jq -cn --arg n "csi$i-$s-$ID" --arg d "e2e-$ID.csi.tarema.local" --arg ns "$NS" --arg c "$s-csi$i" '
      {apiVersion: "v1", kind: "PersistentVolume", metadata: {name: $n},
       spec: {storageClassName: "", accessModes: ["ReadWriteOnce"], capacity: {storage: "1Gi"},
              csi: {driver: $d, volumeHandle: $n}, persistentVolumeReclaimPolicy: "Retain",
              claimRef: {namespace: $ns, name: $c}}}' | kubectl create -f - >/dev/null
    claim "$s-csi$i" "" ReadWriteOnce "csi$i-$s-$ID"
  done
done
for c in k-csi1 k-csi2 t-csi1 t-csi2; do wait_for 60 claim_bound $c || fail "claim $c bound (PV binder)"; done
# pod_zb NAME SCHEDULER CLAIM: as pod, on the zb node only
pod_zb() {
  pod_json "$NS" "$1" "$2" 100m 64Mi '{}' "$ID" |
    jq -c --arg node "$ZB" --arg claim "$3" '
      .spec.nodeSelector = {"kubernetes.io/hostname": $node}
      | .spec.volumes = [{name: "data", persistentVolumeClaim: {claimName: $claim}}]' |
    kubectl create -f - >/dev/null
}
# one scheduler after the other: each would count the other's volume on the one node
for s in k t; do
  pod_zb "$s-csi1" "$(sched_of $s)" "$s-csi1"
  if wait_for 60 bound "$s-csi1"; then pass "$(who $s): first CSI volume on the zb node (limit 1), bound"; else fail "$(who $s): first CSI volume on the zb node (limit 1), bound" "$(notes $s-csi1)"; fi
  pod_zb "$s-csi2" "$(sched_of $s)" "$s-csi2"
  pending "$(who $s): a second CSI volume of the driver on the zb node, Pending" "$s-csi2" 'exceed max volume count'
  kubectl delete pod -n "$NS" "$s-csi2" --grace-period=0 --force --wait=true --timeout=60s >/dev/null 2>&1
  kubectl delete pod -n "$NS" "$s-csi1" --grace-period=0 --force --wait=true --timeout=60s >/dev/null 2>&1
done

# ---- the two schedulers agree ------------------------------------------------------------------
for c in dyn eph static; do
  [ "${OUTCOME[$c-k]}" = "${OUTCOME[$c-t]}" ] && pass "same outcome under both schedulers: $c (${OUTCOME[$c-t]})" ||
    fail "same outcome under both schedulers: $c" "kube-scheduler ${OUTCOME[$c-k]}, tarema ${OUTCOME[$c-t]}"
done

# ---- 6. PreBind timeout and undo (tarema) -------------------------------------------------------
kubectl create -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-none-$ID}
provisioner: tarema.local/nobody
volumeBindingMode: WaitForFirstConsumer
EOF
claim t-none "sc-none-$ID" ReadWriteOnce
pod t-none "$SCHED" t-none
# the choice is written (the annotation) and, after the timeout, taken back with the event
selected() { [ -n "$(selected_node t-none)" ]; }
if wait_for 60 selected; then pass "tarema: selected-node written on the claim to provision"; else fail "tarema: selected-node written on the claim to provision" "$(notes t-none)"; fi
pending "tarema: no provisioner answers within volumeBindTimeoutSeconds, requeued with the PreBind failure" t-none \
  'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
undone() { grep -q "volume choice undone pod=$NS/t-none what=\"removing the selected node of claim $NS/t-none\"" "$WORK/sched.log"; }
if wait_for 30 undone && ! grep -q 'volume undo not started' "$WORK/sched.log"; then
  pass "tarema: the selected node it wrote is taken back"
else
  fail "tarema: the selected node it wrote is taken back" "$(grep -i 'volume' "$WORK/sched.log" | tail -n 3)"
fi

out=$(check_fit)
if [ $? = 0 ] && [ -z "$out" ]; then pass "every node's pods fit it"; else fail "every node's pods fit it" "$out"; fi
summary
