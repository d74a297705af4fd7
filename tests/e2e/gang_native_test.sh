#!/usr/bin/env bash
# tests/e2e/gang_native_test.sh: all-or-nothing gangs declared through Kubernetes 1.36+'s own
# PodGroup objects (scheduling.k8s.io v1alpha2 on 1.36, v1beta1 on 1.37: the version is read off
# the API server's discovery, by the scheduler and by this test; pods with
# spec.schedulingGroup.podGroupName), tarema-scheduler against a control plane brought up with
# `TAREMA_K8S_VERSION=v1.37.2 hack/cluster.sh up --workload-api`, on this test's own tainted
# nodes:
#  1. a gang of 6 (minCount 6) is bound whole; its PodGroup gets the condition kube-scheduler
#     writes (1.37: PodGroupInitiallyScheduled True, reason Scheduled)
#  2. a gang that does not fit waits whole (none bound) with FailedScheduling on its pods, and
#     its PodGroup's condition is False, reason Unschedulable; a plain pod still fits
#  3. pods whose PodGroup does not exist yet wait and say so; once it is created they are bound
#  4. a PodGroup with the basic policy: its pods are scheduled one by one
# On a cluster serving no such PodGroups (Kubernetes 1.35) there is nothing to test: it says so
# and reports 0 passed, 0 failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

if ! why=$(gang_require_api native); then
  echo "skipped: $why"
  summary
  exit 0
fi
sched_e2e_begin gangnative gn
GV=$(gang_native_gv)
# the condition type of each version (k8s.io/api scheduling types)
case $GV in */v1alpha2) COND=PodGroupScheduled ;; *) COND=PodGroupInitiallyScheduled ;; esac
pass "the API server serves PodGroups ($GV)"
sched_e2e_namespace

# 4 nodes x 4 cores, one group
cat >"$WORK/nodes.yaml" <<EOF2
nodes:
  - {prefix: ${P}n, count: 4, cpu: 4, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "n", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF2
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
if ! start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" --qps 2000 --burst 4000; then
  fail "tarema-scheduler starts and becomes ready" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler starts and becomes ready"
if wait_for 15 grep -q "PodGroup API $GV served: native gangs on" "$WORK/sched.log"; then
  pass "the scheduler found $GV PodGroups by discovery"
else
  fail "the scheduler found $GV PodGroups by discovery" "$(grep -i 'podgroup' "$WORK/sched.log" | tail -n 3)"
fi

export GANG_POD_PATCH=".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
  | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"}"
bound_of() { # nothing and status 1 when the list fails (never "0 bound")
  local pods
  pods=$(read_ok kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o json) || return 1
  jq '[.items[] | select((.spec.nodeName // "") != "")] | length' <<<"$pods"
}
wait_bound() { # NAME N SECONDS
  local deadline=$(($(date +%s) + $3)) b
  until b=$(bound_of "$1") && [ "$b" -ge "$2" ]; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
# cond_is NAME STATUS REASON: the PodGroup's scheduling condition
cond_is() {
  kubectl get "podgroups.scheduling.k8s.io" -n "$NS" "$1" -o json 2>/dev/null |
    jq -e --arg t "$COND" --arg s "$2" --arg r "$3" \
      '.status.conditions // [] | any(.type == $t and .status == $s and .reason == $r and (.lastTransitionTime // "") != "")' >/dev/null
}
cond_of() { kubectl get "podgroups.scheduling.k8s.io" -n "$NS" "$1" -o json 2>&1 | jq -c '.status.conditions' 2>&1; }

# ---- 1. a gang of 6 ---------------------------------------------------------------------------
gang_create native "$NS" n6 6 6 "$SCHED" 1 1Gi
if wait_bound n6 6 60; then pass "PodGroup gang of 6 bound whole"; else fail "PodGroup gang of 6 bound whole" "$(kubectl get pods -n "$NS" -o wide)"; fi
if wait_for 30 cond_is n6 True Scheduled; then
  pass "its PodGroup: $COND True, reason Scheduled"
else
  fail "its PodGroup: $COND True, reason Scheduled" "$(cond_of n6)"
fi

# ---- 2. does not fit: waits whole -------------------------------------------------------------
gang_create native "$NS" nbig 5 5 "$SCHED" 3 1Gi # 10 cores left, 5 x 3 do not fit (3 per node)
said() { kubectl get events.events.k8s.io -n "$NS" -o json | jq -e '[.items[] | select(.reason == "FailedScheduling" and (.regarding.name | startswith("nbig-")) and (.note | test("gang k8s-podgroup/.*/nbig: only [0-9]+ of the 5 pod")))] | length > 0' >/dev/null; }
if wait_for 30 said; then pass "a gang that does not fit: FailedScheduling on its pods with the gang's reason"; else fail "a gang that does not fit: FailedScheduling on its pods with the gang's reason" "$(kubectl get events.events.k8s.io -n "$NS" -o json | jq -r '.items[] | select(.reason == "FailedScheduling") | .note' | tail -n 2)"; fi
if [ "$(bound_of nbig)" = 0 ]; then pass "none of it bound"; else fail "none of it bound" "$(bound_of nbig)"; fi
if wait_for 30 cond_is nbig False Unschedulable; then
  pass "its PodGroup: $COND False, reason Unschedulable"
else
  fail "its PodGroup: $COND False, reason Unschedulable" "$(cond_of nbig)"
fi
pod_json "$NS" plain "$SCHED" 2 1Gi '{}' "$ID" | jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e": $id}' | kubectl create -f - >/dev/null
if wait_for 30 bash -c "[ -n \"\$(kubectl get pod -n $NS plain -o jsonpath='{.spec.nodeName}')\" ]"; then pass "nothing held: a plain pod still fits"; else fail "nothing held: a plain pod still fits"; fi
kubectl delete pods -n "$NS" --all --wait=false >/dev/null
wait_for 60 bash -c "[ \$(kubectl get pods -n $NS -o name | wc -l) = 0 ]"

# ---- 3. PodGroup created after its pods ---------------------------------------------------------
gang_pods_json native "$NS" nlate 1 3 "$SCHED" 100m 64Mi | kubectl create -f - >/dev/null
waits() { kubectl get events.events.k8s.io -n "$NS" -o json | jq -e '[.items[] | select(.reason == "FailedScheduling" and (.regarding.name | startswith("nlate-")) and (.note | test("waiting for PodGroup .*/nlate to exist")))] | length > 0' >/dev/null; }
if wait_for 30 waits; then pass "pods of a missing PodGroup wait and say so"; else fail "pods of a missing PodGroup wait and say so"; fi
[ "$(bound_of nlate)" = 0 ] && pass "none bound meanwhile" || fail "none bound meanwhile"
gang_group_json native "$NS" nlate 3 | kubectl create -f - >/dev/null
if wait_bound nlate 3 60; then pass "bound whole once the PodGroup exists"; else fail "bound whole once the PodGroup exists" "$(bound_of nlate)"; fi

# ---- 4. basic policy ----------------------------------------------------------------------------
jq -cn --arg gv "$GV" --arg ns "$NS" '{apiVersion: $gv, kind: "PodGroup", metadata: {namespace: $ns, name: "nbasic"}, spec: {schedulingPolicy: {basic: {}}}}' | kubectl create -f - >/dev/null
gang_pods_json native "$NS" nbasic 1 2 "$SCHED" 100m 64Mi | kubectl create -f - >/dev/null
if wait_bound nbasic 2 60; then pass "basic policy: pods scheduled one by one"; else fail "basic policy: pods scheduled one by one" "$(bound_of nbasic)"; fi

if grep -qE "AddressSanitizer|Segmentation|assert" "$WORK/sched.log"; then fail "scheduler log clean" "$(grep -E 'AddressSanitizer|Segmentation|assert' "$WORK/sched.log" | head -n 3)"; else pass "scheduler log clean"; fi
summary
