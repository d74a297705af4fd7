#!/usr/bin/env bash
# tests/e2e/gang_native_preemption_test.sh: preemption with Kubernetes' own PodGroups
# (scheduling.k8s.io, 1.36+; issue 31) under tarema-scheduler and under the real kube-scheduler
# of the same cluster (the reference), the same cases one after the other on each scheduler's
# own two tainted nodes of 4 cores:
#  1. a PodGroup with spec.disruptionMode all (2 pods of 3 cores, priority 100, one on each
#     node) and a single pod of 2 cores at priority 1000: the gang goes whole (both pods), the
#     pod is bound;
#  2. the same with disruptionMode single: one member goes, the other stays, the pod is bound;
#  3. a gang of 2 x 3 cores at priority 1000 on the nodes held by a single-mode gang of priority
#     100: both lower pods go, the gang is bound;
#  4. a gang of 3 x 3 cores at priority 1000 that could not fit even on the empty nodes: tarema
#     evicts nothing throughout 10 s after refusing it, and kube-scheduler does the same.
# Each case's outcome (pods evicted, preemptor bound) is printed for both schedulers and must be
# the same. On a cluster without native PodGroups (Kubernetes 1.35, or no --workload-api) there
# is nothing to test: it says so and reports 0 passed, 0 failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

if ! why=$(gang_require_api native); then
  echo "skipped: $why"
  summary
  exit 0
fi
GV=$(gang_native_gv)
case $GV in
  */v1alpha2) ALL='"PodGroup"' SINGLE='"Pod"' ;;
  *) ALL='{"all": {}}' SINGLE='{"single": {}}' ;;
esac
sched_e2e_begin gangnpre gn
KS=default-scheduler
KS_STARTED=
extra_cleanup() {
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  kubectl delete priorityclass "$ID-low" "$ID-high" --wait=false >/dev/null 2>&1
  return 0
}
sched_e2e_namespace
check "priority classes low 100, high 1000" priority_classes "$ID-low" 100 "$ID-high" 1000
for side in t k; do
  cat >"$WORK/nodes-$side.yaml" <<EOF2
nodes:
  - {prefix: ${P}$side, count: 2, cpu: 4, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "n",
              tarema.io/e2e: "$ID", tarema.io/npre-e2e: "$ID-$side"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF2
done
check "test nodes created (two of 4 cores per scheduler)" bash -c \
  "bash '$REPO_ROOT/hack/cluster.sh' nodes '$WORK/nodes-t.yaml' && bash '$REPO_ROOT/hack/cluster.sh' nodes '$WORK/nodes-k.yaml'"
sched_e2e_start --qps 2000 --burst 4000
kube_scheduler_up

# pod_patch SIDE CLASS: the jq filter putting a pod on SIDE's nodes at CLASS's priority.
pod_patch() {
  echo ".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
    | .spec.nodeSelector = {\"tarema.io/npre-e2e\": \"$ID-$1\"} | .spec.priorityClassName = \"$ID-$2\""
}
# ngang SIDE SCHED NAME SIZE CPU CLASS MODE: a native PodGroup (minCount SIZE, its priority class
# and disruptionMode MODE) and its pods.
ngang() {
  {
    gang_group_json native "$NS" "$3" "$4" |
      jq -c --arg pc "$ID-$6" --argjson mode "$7" '.spec.priorityClassName = $pc | .spec.disruptionMode = $mode'
    GANG_POD_PATCH=$(pod_patch "$1" "$6") gang_pods_json native "$NS" "$3" 1 "$4" "$2" "$5" 256Mi
  } | kubectl create -f - >/dev/null
}
solo() { # SIDE SCHED NAME CPU CLASS
  pod_json "$NS" "$3" "$2" "$4" 256Mi '{}' "$ID" | jq -c "$(pod_patch "$1" "$5")" | kubectl create -f - >/dev/null
}
bound_of() { # NAME-PREFIX: pods bound and not being deleted
  local j
  j=$(read_ok kubectl get pods -n "$NS" -o json) || return 1
  jq --arg p "$1-" '[.items[] | select((.metadata.name | startswith($p)) and (.spec.nodeName // "") != "" and .metadata.deletionTimestamp == null)] | length' <<<"$j"
}
exist_of() { # NAME-PREFIX: pods that exist and are not being deleted
  local j
  j=$(read_ok kubectl get pods -n "$NS" -o json) || return 1
  jq --arg p "$1-" '[.items[] | select((.metadata.name | startswith($p)) and .metadata.deletionTimestamp == null)] | length' <<<"$j"
}
bound_is() { local b; b=$(bound_of "$1") && [ "$b" -eq "$2" ]; }
solo_bound() { [ -n "$(pod_node "$NS" "$1")" ]; }
clear_ns() {
  kubectl delete pods -n "$NS" --all --wait=false >/dev/null 2>&1
  kubectl delete "podgroups.${GV%/*}" -n "$NS" --all --wait=false >/dev/null 2>&1
  no_pods() { [ "$(kubectl get pods -n "$NS" -o name 2>/dev/null | wc -l)" = 0 ]; }
  wait_for 60 no_pods
}
# outcomes by case and side, read once the preemptor is bound (its victims went before)
declare -A OUT

# case_solo TAG MODE: case 1 (all) or 2 (single) on both sides; OUT[TAG-side] = "evicted bound".
case_solo() {
  local tag=$1 mode=$2 side s
  for side in t k; do
    case $side in t) s=$SCHED ;; k) s=$KS ;; esac
    ngang "$side" "$s" "$tag$side-low" 2 3 low "$mode"
  done
  for side in t k; do
    if wait_for 60 bound_is "$tag${side}-low" 2; then pass "$tag/$side: the low gang is bound (2 x 3 cores, one per node)"; else fail "$tag/$side: the low gang is bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
  done
  for side in t k; do
    case $side in t) s=$SCHED ;; k) s=$KS ;; esac
    solo "$side" "$s" "$tag$side-hi" 2 high
  done
  for side in t k; do
    if wait_for 90 solo_bound "$tag$side-hi"; then pass "$tag/$side: the 2-core pod of priority 1000 is bound"; else fail "$tag/$side: the 2-core pod of priority 1000 is bound" "$(kubectl get pods -n "$NS" -o wide; notes "$tag$side-hi")"; fi
  done
  for side in t k; do
    OUT[$tag-$side]="evicted $((2 - $(exist_of "$tag$side-low"))) of 2, preemptor bound $(solo_bound "$tag$side-hi" && echo yes || echo no)"
  done
}

# ---- 1. disruptionMode all -------------------------------------------------------------------------
case_solo all "$ALL"
echo "# 1. mode all:    tarema: ${OUT[all-t]}; kube-scheduler: ${OUT[all-k]}"
if [ "${OUT[all-t]}" = "${OUT[all-k]}" ] && [ "${OUT[all-t]}" = "evicted 2 of 2, preemptor bound yes" ]; then
  pass "1. mode all: the gang goes whole under both schedulers (${OUT[all-t]})"
else
  fail "1. mode all: the gang goes whole under both schedulers" "tarema: ${OUT[all-t]}; kube-scheduler: ${OUT[all-k]}"
fi
clear_ns

# ---- 2. disruptionMode single ----------------------------------------------------------------------
case_solo sgl "$SINGLE"
echo "# 2. mode single: tarema: ${OUT[sgl-t]}; kube-scheduler: ${OUT[sgl-k]}"
if [ "${OUT[sgl-t]}" = "${OUT[sgl-k]}" ] && [ "${OUT[sgl-t]}" = "evicted 1 of 2, preemptor bound yes" ]; then
  pass "2. mode single: one member goes under both schedulers (${OUT[sgl-t]})"
else
  fail "2. mode single: one member goes under both schedulers" "tarema: ${OUT[sgl-t]}; kube-scheduler: ${OUT[sgl-k]}"
fi
clear_ns

# ---- 3. a gang preempts ----------------------------------------------------------------------------
# gang_vs_gang TAG CASE SIZE: on each side a low single-mode gang of 2 x 3 cores (bound), then a
# high one of SIZE x 3 cores (TAG: the pods' name prefix).
gang_vs_gang() {
  local side s
  for side in t k; do
    case $side in t) s=$SCHED ;; k) s=$KS ;; esac
    ngang "$side" "$s" "$1$side-low" 2 3 low "$SINGLE"
  done
  for side in t k; do
    if wait_for 60 bound_is "$1$side-low" 2; then pass "$2/$side: the low gang is bound"; else fail "$2/$side: the low gang is bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
  done
  for side in t k; do
    case $side in t) s=$SCHED ;; k) s=$KS ;; esac
    ngang "$side" "$s" "$1$side-hi" "$3" 3 high "$SINGLE"
  done
}
gang_vs_gang g 3 2
for side in t k; do
  if wait_for 120 bound_is "g$side-hi" 2; then pass "3/$side: the high gang (2 x 3 cores) is bound"; else fail "3/$side: the high gang (2 x 3 cores) is bound" "$(kubectl get pods -n "$NS" -o wide; notes "g$side-hi-1")"; fi
  OUT[g-$side]="evicted $((2 - $(exist_of "g$side-low"))) of 2, gang bound $(bound_of "g$side-hi") of 2"
done
echo "# 3. a gang:      tarema: ${OUT[g-t]}; kube-scheduler: ${OUT[g-k]}"
if [ "${OUT[g-t]}" = "${OUT[g-k]}" ] && [ "${OUT[g-t]}" = "evicted 2 of 2, gang bound 2 of 2" ]; then
  pass "3. a gang preempts: the same under both schedulers (${OUT[g-t]})"
else
  fail "3. a gang preempts: the same under both schedulers" "tarema: ${OUT[g-t]}; kube-scheduler: ${OUT[g-k]}"
fi
clear_ns

# ---- 4. a gang that could not fit even with the lower pods gone ----------------------------------
# 3 x 3 cores on two nodes of 4: tarema evicts nothing (issue 31: nothing is evicted unless the
# whole gang then fits), as kube-scheduler
gang_vs_gang x 4 3
tried() { failed_event "x$1-hi-1" . || failed_event "x$1-hi-2" . || failed_event "x$1-hi-3" .; }
for side in t k; do
  if wait_for 60 tried "$side"; then pass "4/$side: the scheduler tried the gang of 3 x 3 cores and refused it"; else fail "4/$side: the scheduler tried the gang of 3 x 3 cores" "$(notes "x$side-hi-1")"; fi
done
low_stays() { bound_is "x$1-low" 2; }
if always_for 10 low_stays t; then
  pass "4/t: tarema evicts nothing for a gang that could not fit (the low gang bound throughout 10 s after the refusal)"
else
  fail "4/t: tarema evicts nothing for a gang that could not fit" "$(kubectl get pods -n "$NS" -o wide)"
fi
for side in t k; do
  OUT[x-$side]="evicted $((2 - $(exist_of "x$side-low"))) of 2, gang bound $(bound_of "x$side-hi") of 3"
done
echo "# 4. no fit:      tarema: ${OUT[x-t]}; kube-scheduler: ${OUT[x-k]}"
if [ "${OUT[x-t]}" = "${OUT[x-k]}" ]; then
  pass "4. no fit: the same under both schedulers (${OUT[x-t]})"
else
  fail "4. no fit: the same under both schedulers" "tarema: ${OUT[x-t]}; kube-scheduler: ${OUT[x-k]}"
fi
check "no node over-committed" check_fit
summary
