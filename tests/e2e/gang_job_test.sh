#!/usr/bin/env bash
# tests/e2e/gang_job_test.sh: a plain batch/v1 Job with a gang policy (Kubernetes 1.37's
# spec.scheduling.schedulingPolicy.gang.minCount, WorkloadWithJob feature gate): the Job
# controller itself creates the Workload and the runtime PodGroup and points the Job's pods at
# the group (spec.schedulingGroup); nothing tarema-specific is written. The same Job runs under
# tarema-scheduler and under the real kube-scheduler (the reference), each on its own tainted
# nodes of 4 cores:
#  1. the Job controller made the Workload and PodGroup (minCount 3, owned by the Job's objects)
#     and its pods name that PodGroup
#  2. three pods of 3 cores on two nodes: all-or-nothing, none is bound, the PodGroup's
#     condition says Unschedulable (under both schedulers)
#  3. a third node comes: all three are bound, the PodGroup says Scheduled (under both)
# On a cluster without the Job integration (Kubernetes 1.35, or the gate off) there is nothing
# to test: it says so and reports 0 passed, 0 failed.
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
case $GV in */v1alpha2) COND=PodGroupScheduled ;; *) COND=PodGroupInitiallyScheduled ;; esac
sched_e2e_begin gangjob gj
KS=default-scheduler
KS_STARTED=
extra_cleanup() {
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  return 0
}
sched_e2e_namespace

# job_json NAME SCHEDULER SELECTOR: a Job of 3 pods of 3 cores that must start together.
job_json() {
  jq -cn --arg ns "$NS" --arg n "$1" --arg s "$2" --arg sel "$3" --arg id "$ID" '
    {apiVersion: "batch/v1", kind: "Job", metadata: {namespace: $ns, name: $n},
     spec: {parallelism: 3, completions: 3, backoffLimit: 0,
            scheduling: {schedulingPolicy: {gang: {minCount: 3}}},
            template: {metadata: {labels: {"tarema.io/job-e2e": $n}},
                       spec: {schedulerName: $s, restartPolicy: "Never",
                              nodeSelector: {"tarema.io/job-e2e": $sel},
                              tolerations: [{key: "tarema.io/e2e", operator: "Equal", value: $id,
                                             effect: "NoSchedule"}],
                              containers: [{name: "c", image: "busybox",
                                            resources: {requests: {cpu: "3", memory: "1Gi"}}}]}}}}'
}

# The API server keeps spec.scheduling only with the WorkloadWithJob gate on (hack/cluster.sh
# turns it on from 1.36 with --workload-api); otherwise the field is dropped or refused.
probe=$(job_json probe "$SCHED" probe | kubectl create --dry-run=server -o json -f - 2>&1)
if ! jq -e '.spec.scheduling.schedulingPolicy.gang.minCount == 3' <<<"$probe" >/dev/null 2>&1; then
  echo "skipped: the API server does not keep a Job's spec.scheduling (the WorkloadWithJob gate is off; Kubernetes 1.36+ with 'hack/cluster.sh up --workload-api'): $(head -c 300 <<<"$probe")"
  summary
  exit 0
fi
pass "the API server keeps a Job's gang policy ($GV PodGroups)"

# node_yaml SUFFIX COUNT: COUNT nodes of 4 cores for one scheduler's Job.
node_yaml() {
  cat <<EOF2
nodes:
  - {prefix: ${P}$1$3, count: $2, cpu: 4, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "n",
              tarema.io/e2e: "$ID", tarema.io/job-e2e: "$ID-$1"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF2
}
node_yaml t 2 a >"$WORK/nodes-t.yaml"
node_yaml k 2 a >"$WORK/nodes-k.yaml"
check "test nodes created (two of 4 cores per scheduler)" bash -c \
  "bash '$REPO_ROOT/hack/cluster.sh' nodes '$WORK/nodes-t.yaml' && bash '$REPO_ROOT/hack/cluster.sh' nodes '$WORK/nodes-k.yaml'"
sched_e2e_start --qps 2000 --burst 4000
kube_scheduler_up

# pg_of JOB: the PodGroup the Job's pods name (spec.schedulingGroup.podGroupName), once all 3
# pods exist and agree.
pg_of() {
  local pods
  pods=$(read_ok kubectl get pods -n "$NS" -l "tarema.io/job-e2e=$1" -o json) || return 1
  jq -er '[.items[].spec.schedulingGroup.podGroupName // ""] | unique
          | if length == 1 and .[0] != "" then .[0] else empty end' <<<"$pods" &&
    [ "$(jq '.items | length' <<<"$pods")" -eq 3 ]
}
bound_of() { # JOB: pods bound; nothing and status 1 when the list fails
  local pods
  pods=$(read_ok kubectl get pods -n "$NS" -l "tarema.io/job-e2e=$1" -o json) || return 1
  jq '[.items[] | select((.spec.nodeName // "") != "")] | length' <<<"$pods"
}
all_bound() { local b; b=$(bound_of "$1") && [ "$b" -eq 3 ]; }
cond_is() { # PODGROUP STATUS REASON
  kubectl get "podgroups.${GV%%/*}" -n "$NS" "$1" -o json 2>/dev/null |
    jq -e --arg t "$COND" --arg s "$2" --arg r "$3" \
      '.status.conditions // [] | any(.type == $t and .status == $s and .reason == $r)' >/dev/null
}
cond_of() { kubectl get "podgroups.${GV%%/*}" -n "$NS" "$1" -o json 2>&1 | jq -c '.status.conditions' 2>&1; }

declare -A PG
for who in tarema kube; do
  case $who in tarema) s=$SCHED sel=$ID-t ;; *) s=$KS sel=$ID-k ;; esac
  job_json "j-$who" "$s" "$sel" | kubectl create -f - >/dev/null 2>"$WORK/create.err" ||
    fail "$who: the Job is created" "$(cat "$WORK/create.err")"
done

# ---- 1. the Job controller's objects ----------------------------------------------------------
for who in tarema kube; do
  if wait_for 60 pg_of "j-$who"; then
    PG[$who]=$(pg_of "j-$who")
    pass "$who: the Job's 3 pods name PodGroup ${PG[$who]} (made by the Job controller)"
  else
    fail "$who: the Job's 3 pods name one PodGroup (made by the Job controller)" \
      "$(kubectl get pods -n "$NS" -l "tarema.io/job-e2e=j-$who" -o json | jq -c '[.items[] | {n: .metadata.name, g: .spec.schedulingGroup}]')"
    continue
  fi
  pg=$(kubectl get "podgroups.${GV%%/*}" -n "$NS" "${PG[$who]}" -o json 2>&1)
  if jq -e '.spec.schedulingPolicy.gang.minCount == 3' <<<"$pg" >/dev/null 2>&1; then
    pass "$who: its PodGroup asks for a gang of 3"
  else
    fail "$who: its PodGroup asks for a gang of 3" "$(head -c 400 <<<"$pg")"
  fi
  wl=$(kubectl get "workloads.${GV%%/*}" -n "$NS" -o json 2>&1)
  if jq -e --arg j "j-$who" '[.items[] | select(any(.metadata.ownerReferences[]?; .kind == "Job" and .name == $j))] | length == 1' <<<"$wl" >/dev/null 2>&1; then
    pass "$who: the Job owns one Workload"
  else
    fail "$who: the Job owns one Workload" "$(jq -c '[.items[]? | {n: .metadata.name, o: .metadata.ownerReferences}]' <<<"$wl" 2>&1 | head -c 400)"
  fi
done

# ---- 2. two nodes for three pods of 3 cores: none bound ---------------------------------------
for who in tarema kube; do
  [ -n "${PG[$who]:-}" ] || continue
  if wait_for 60 cond_is "${PG[$who]}" False Unschedulable; then
    pass "$who: the gang does not fit two nodes: $COND False, reason Unschedulable"
  else
    fail "$who: the gang does not fit two nodes: $COND False, reason Unschedulable" "$(cond_of "${PG[$who]}")"
  fi
  b=$(bound_of "j-$who")
  if [ "$b" = 0 ]; then
    pass "$who: all or nothing: none of its pods is bound"
  else
    fail "$who: all or nothing: none of its pods is bound" "bound: $b; $(kubectl get pods -n "$NS" -o wide)"
  fi
done

# ---- 3. a third node: all three bound together ------------------------------------------------
node_yaml t 1 b >"$WORK/nodes-t2.yaml"
node_yaml k 1 b >"$WORK/nodes-k2.yaml"
check "a third node per scheduler" bash -c \
  "bash '$REPO_ROOT/hack/cluster.sh' nodes '$WORK/nodes-t2.yaml' && bash '$REPO_ROOT/hack/cluster.sh' nodes '$WORK/nodes-k2.yaml'"
for who in tarema kube; do
  [ -n "${PG[$who]:-}" ] || continue
  if wait_for 90 all_bound "j-$who"; then
    pass "$who: with a third node the Job's 3 pods are bound"
  else
    fail "$who: with a third node the Job's 3 pods are bound" "$(kubectl get pods -n "$NS" -o wide; notes "$(kubectl get pods -n "$NS" -l "tarema.io/job-e2e=j-$who" -o name | head -n 1 | cut -d/ -f2)")"
  fi
  if wait_for 30 cond_is "${PG[$who]}" True Scheduled; then
    pass "$who: its PodGroup: $COND True, reason Scheduled"
  else
    fail "$who: its PodGroup: $COND True, reason Scheduled" "$(cond_of "${PG[$who]}")"
  fi
done
check "no node over-committed" check_fit

summary
