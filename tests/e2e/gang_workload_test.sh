#!/usr/bin/env bash
# tests/e2e/gang_workload_test.sh: all-or-nothing gangs declared through Kubernetes 1.35's
# Workload API (scheduling.k8s.io/v1alpha1 Workload, spec.podGroups[].policy.gang.minCount; pods
# with spec.workloadRef), tarema-scheduler against a control plane brought up with
# `hack/cluster.sh up --workload-api`, on this test's own tainted nodes:
#  1. a gang of 6 (minCount 6) is bound whole
#  2. a gang that does not fit waits whole (none bound) with FailedScheduling on its pods and
#     the gang's reason; a plain pod still fits (nothing held)
#  3. replica keys: one pod group with minCount 3 and pods of two podGroupReplicaKeys is two
#     gangs: the key with 3 pods is bound, the key with 2 waits
#  4. pods whose Workload does not exist yet wait and say so; once it is created they are bound
#  5. a pod group with the basic policy is scheduled pod by pod
#  6. restart: killed while gangs are placed, started again: every gang whole, no node over
#     its allocatable
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

gang_skip_on_native "the Workload gang test"
sched_e2e_begin gangwl gw
if ! why=$(gang_require_api workload); then fail "the Workload API is served" "$why"; summary; exit 1; fi
pass "the Workload API is served"
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
if grep -q "Workload API .* not served" "$WORK/sched.log"; then fail "the Workload informer runs" "$(grep 'not served' "$WORK/sched.log")"; else pass "the Workload informer runs"; fi

export GANG_POD_PATCH=".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
  | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"}"
bound_of() { # nothing and status 1 when the list fails (never "0 bound")
  local pods
  pods=$(read_ok kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o json) || return 1
  jq --arg k "${2:-}" '[.items[] | select($k == "" or .spec.workloadRef.podGroupReplicaKey == $k) | select((.spec.nodeName // "") != "")] | length' <<<"$pods"
}
wait_bound() { # NAME N SECONDS [REPLICAKEY]
  local deadline=$(($(date +%s) + $3)) b
  until b=$(bound_of "$1" "${4:-}") && [ "$b" -ge "$2" ]; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}

# ---- 1. a gang of 6 ---------------------------------------------------------------------------
gang_create workload "$NS" w6 6 6 "$SCHED" 1 1Gi
if wait_bound w6 6 60; then pass "Workload gang of 6 bound whole"; else fail "Workload gang of 6 bound whole" "$(kubectl get pods -n "$NS" -o wide)"; fi

# ---- 2. does not fit: waits whole -------------------------------------------------------------
gang_create workload "$NS" wbig 5 5 "$SCHED" 3 1Gi # 10 cores left, 5 x 3 do not fit (3 per node)
said() { kubectl get events.events.k8s.io -n "$NS" -o json | jq -e '[.items[] | select(.reason == "FailedScheduling" and (.regarding.name | startswith("wbig-")) and (.note | test("gang workload/.*/wbig/gang/: only [0-9]+ of the 5 pod")))] | length > 0' >/dev/null; }
if wait_for 30 said; then pass "a gang that does not fit: FailedScheduling on its pods with the gang's reason"; else fail "a gang that does not fit: FailedScheduling on its pods with the gang's reason" "$(kubectl get events.events.k8s.io -n "$NS" -o json | jq -r '.items[] | select(.reason == "FailedScheduling") | .note' | tail -n 2)"; fi
if [ "$(bound_of wbig)" = 0 ]; then pass "none of it bound"; else fail "none of it bound" "$(bound_of wbig)"; fi
pod_json "$NS" plain "$SCHED" 2 1Gi '{}' "$ID" | jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e": $id}' | kubectl create -f - >/dev/null
if wait_for 30 bash -c "[ -n \"\$(kubectl get pod -n $NS plain -o jsonpath='{.spec.nodeName}')\" ]"; then pass "nothing held: a plain pod still fits"; else fail "nothing held: a plain pod still fits"; fi
kubectl delete pods -n "$NS" --all --wait=false >/dev/null
wait_for 60 bash -c "[ \$(kubectl get pods -n $NS -o name | wc -l) = 0 ]"

# ---- 3. replica keys: independent gangs ---------------------------------------------------------
gang_group_json workload "$NS" wr 3 | kubectl create -f - >/dev/null
{
  GANG_POD_PATCH="$GANG_POD_PATCH | .spec.workloadRef.podGroupReplicaKey = \"a\"" gang_pods_json workload "$NS" wr 1 3 "$SCHED" 500m 64Mi
  GANG_POD_PATCH="$GANG_POD_PATCH | .spec.workloadRef.podGroupReplicaKey = \"b\"" gang_pods_json workload "$NS" wr 4 5 "$SCHED" 500m 64Mi
} | kubectl create -f - >/dev/null
if wait_bound wr 3 60 a; then pass "replica key a (3 pods, minCount 3) bound"; else fail "replica key a (3 pods, minCount 3) bound" "$(bound_of wr a)"; fi
# no fixed sleep: none of b bound at every poll until the scheduler reported on one of b's pods
# (a FailedScheduling event on wr-4 or wr-5), and once more after
b_tried() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json) || return 1
  jq -e '[.items[] | select(.reason == "FailedScheduling" and (.regarding.name | IN("wr-4", "wr-5")))] | length > 0' <<<"$ev" >/dev/null
}
b_none() { local b; b=$(bound_of wr b) && [ "$b" = 0 ]; }
b_waits() {
  local deadline=$(($(date +%s) + 30))
  until b_tried; do
    b_none || return 1
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
  b_none
}
if b_waits; then pass "replica key b (2 pods) waits: a gang of its own"; else fail "replica key b (2 pods) waits: a gang of its own" "bound $(bound_of wr b 2>&1); $(kubectl get events.events.k8s.io -n "$NS" 2>&1 | grep -E 'wr-[45]' | tail -n 3)"; fi

# ---- 4. Workload created after its pods ---------------------------------------------------------
gang_pods_json workload "$NS" wlate 1 3 "$SCHED" 100m 64Mi | kubectl create -f - >/dev/null
waits() { kubectl get events.events.k8s.io -n "$NS" -o json | jq -e '[.items[] | select(.reason == "FailedScheduling" and (.regarding.name | startswith("wlate-")) and (.note | test("waiting for Workload .*/wlate to exist")))] | length > 0' >/dev/null; }
if wait_for 30 waits; then pass "pods of a missing Workload wait and say so"; else fail "pods of a missing Workload wait and say so"; fi
[ "$(bound_of wlate)" = 0 ] && pass "none bound meanwhile" || fail "none bound meanwhile"
gang_group_json workload "$NS" wlate 3 | kubectl create -f - >/dev/null
if wait_bound wlate 3 60; then pass "bound whole once the Workload exists"; else fail "bound whole once the Workload exists" "$(bound_of wlate)"; fi

# ---- 5. basic policy ----------------------------------------------------------------------------
jq -cn --arg ns "$NS" '{apiVersion: "scheduling.k8s.io/v1alpha1", kind: "Workload", metadata: {namespace: $ns, name: "wbasic"}, spec: {podGroups: [{name: "gang", policy: {basic: {}}}]}}' | kubectl create -f - >/dev/null
gang_pods_json workload "$NS" wbasic 1 2 "$SCHED" 100m 64Mi | kubectl create -f - >/dev/null
if wait_bound wbasic 2 60; then pass "basic policy: pods scheduled one by one"; else fail "basic policy: pods scheduled one by one" "$(bound_of wbasic)"; fi

# ---- 6. restart -------------------------------------------------------------------------------
kubectl delete pods -n "$NS" --all --wait=false >/dev/null
wait_for 60 bash -c "[ \$(kubectl get pods -n $NS -o name | wc -l) = 0 ]"
for i in 1 2 3; do gang_create workload "$NS" "wr$i" 4 4 "$SCHED" 1 1Gi; done &
# killed as soon as the first member is bound: the other gangs are being placed or bound
any_bound() { [ "$(kubectl get pods -n "$NS" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" -ge 1 ]; }
for _ in $(seq 1 300); do any_bound && break; sleep 0.05; done
kill -9 "$SCHED_PID"
wait $! 2>/dev/null # the creating loop
wait "$SCHED_PID" 2>/dev/null
mid=$(for i in 1 2 3; do printf 'wr%s %s/4; ' "$i" "$(bound_of "wr$i")"; done)
start_scheduler "$WORK/sched2.log" --scheduler-name "$SCHED" --qps 2000 --burst 4000 || fail "the scheduler starts again" "$(tail -n 5 "$WORK/sched2.log")"
all() { for i in 1 2 3; do [ "$(bound_of "wr$i")" = 4 ] || return 1; done; }
if wait_for 90 all; then pass "restart in the middle: every Workload gang ends whole (at the kill: $mid)"; else fail "restart in the middle: every Workload gang ends whole" "$(for i in 1 2 3; do echo "wr$i $(bound_of "wr$i")"; done)"; fi
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its allocatable"; else fail "no node over its allocatable" "$out"; fi
summary
