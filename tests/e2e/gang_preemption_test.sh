#!/usr/bin/env bash
# tests/e2e/gang_preemption_test.sh: a gang preempts as one unit (issue 31), tarema-scheduler on
# the real control plane with scheduler-plugins PodGroups, on this test's own 4 nodes of 4 cores:
#   - the cluster is full: gang lowa (6 pods x 2 cores, priority 100) and gang lowb (4 x 1 core,
#     priority 50);
#  1. a gang of 20 x 1 core at priority 1000 could not fit even on the empty nodes (16 cores):
#     nothing is evicted, the attempt is counted as unschedulable;
#  2. a gang of 12 x 1 core at priority 1000: evicting lowa whole (12 cores) is enough, and
#     lowa goes whole (all six pods, each with a Preempted event), lowb (the lower priority, but not needed once lowa goes) stays, and the 12 are
#     bound; lowa's PodGroup hears it was preempted whole, the preemptor's says Preempting.
#  3. a single pod (no gang) of 1 core at priority 1000 on the nodes now full with hi (1000) and
#     lowb (50): DefaultPreemption's victim is one member of lowb, which takes its whole gang
#     along (all 4 pods deleted, each with a Preempted event), lowb's PodGroup hears it was
#     preempted whole by the pod, and the pod is bound.
#  `tarema-scheduler explain` on a member says what the gang's own preemption would do (never
#  DefaultPreemption for the member alone): none for the gang of 20 (and why); for a copy of the
#  12-pod gang that no scheduler takes, lowa's 6 pods evicted as one gang and a node for each of
#  the 12 members, before the live scheduler does exactly that.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

# The chart's PodGroup CRD is installed when missing: not served afterwards is a failure.
if ! why=$(gang_require_api podgroup); then
  fail "the PodGroup API is served (CRD from charts/tarema/crds)" "$why"
  summary
  exit 1
fi
sched_e2e_begin gangpre gp
extra_cleanup() {
  kubectl delete priorityclass "$ID-lower" "$ID-low" "$ID-high" --wait=false >/dev/null 2>&1
  return 0
}
sched_e2e_namespace
check "priority classes lower 50, low 100, high 1000" \
  priority_classes "$ID-lower" 50 "$ID-low" 100 "$ID-high" 1000

cat >"$WORK/nodes.yaml" <<EOF2
nodes:
  - {prefix: ${P}n, count: 4, cpu: 4, memory: 16Gi, pods: 110,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "n", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF2
check "test nodes created (4 x 4 cores)" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
sched_e2e_start --qps 2000 --burst 4000

# gang NAME SIZE CPU CLASS: a PodGroup gang (minMember SIZE) at the class's priority.
gang() { GANG_SCHED=$SCHED gang_for "$@"; }
# gang_for NAME SIZE CPU CLASS with GANG_SCHED: the same for another scheduler name.
gang_for() {
  GANG_POD_PATCH=".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
    | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"} | .spec.priorityClassName = \"$ID-$4\"" \
    gang_create podgroup "$NS" "$1" "$2" "$2" "$GANG_SCHED" "$3" 256Mi
}
bound_of() { # NAME: pods of the gang bound (nothing and status 1 when the list fails)
  local pods
  pods=$(read_ok kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o json) || return 1
  jq '[.items[] | select((.spec.nodeName // "") != "" and .metadata.deletionTimestamp == null)] | length' <<<"$pods"
}
bound_is() { local b; b=$(bound_of "$1") && [ "$b" -eq "$2" ]; }
count_of() { # NAME: pods of the gang that exist
  read_jq '.items | length' kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o json
}
count_is() { local c; c=$(count_of "$1") && [ "$c" -eq "$2" ]; }
events_of() { # REASON: "regarding-name note" lines of NS's events with that reason
  kubectl get events.events.k8s.io -n "$NS" -o json |
    jq -r --arg r "$1" '.items[] | select(.reason == $r) | "\(.regarding.name) \(.note)"'
}
preempt_metric() { metric "$SCHED_PORT" "tarema_gang_preemptions_total{result=\"$1\"}"; }
preempt_metric_above() { local v; v=$(preempt_metric "$1") && [ "${v%.*}" -gt "$2" ]; }

check "gang lowa created (6 x 2 core(s), class low)" gang lowa 6 2 low
if wait_for 60 bound_is lowa 6; then pass "lowa (6 x 2 cores, priority 100) bound"; else fail "lowa bound" "$(kubectl get pods -n "$NS" -o wide)"; fi
check "gang lowb created (4 x 1 core(s), class lower)" gang lowb 4 1 lower
if wait_for 60 bound_is lowb 4; then pass "lowb (4 x 1 core, priority 50) bound: the 16 cores are taken"; else fail "lowb bound" "$(kubectl get pods -n "$NS" -o wide)"; fi

# ---- 1. could not fit even with every lower-priority pod gone: nothing evicted -----------------
before=$(preempt_metric unschedulable)
before=${before:-0}
check "gang huge created (20 x 1 core(s), class high)" gang huge 20 1 high
if wait_for 60 preempt_metric_above unschedulable "${before%.*}"; then
  pass "20 x 1 core on 16 cores: the gang's preemption was tried and found nothing to do"
else
  fail "20 x 1 core on 16 cores: the gang's preemption was tried and found nothing to do" \
    "$(grep -i preempt "$WORK/sched.log" | tail -n 3)"
fi
if bound_is lowa 6 && bound_is lowb 4 && [ -z "$(events_of Preempted)" ]; then
  pass "nothing evicted: lowa 6 and lowb 4 still bound, no Preempted event"
else
  fail "nothing evicted: lowa 6 and lowb 4 still bound, no Preempted event" \
    "$(kubectl get pods -n "$NS" -o wide; events_of Preempted)"
fi
explain() { "$BIN/tarema-scheduler" explain "$NS/$1" "${@:2}" --scheduler-name "$SCHED" 2>"$WORK/explain.err"; }
if j=$(explain huge-1 -o json) &&
  jq -e '(.preemption == null) and (.gang.preemption.wouldPreempt == false) and (.gang.preemption.victims == [])' <<<"$j" >/dev/null &&
  t=$(explain huge-1) && grep -q "^gang preemption: none: " <<<"$t" && ! grep -q "^preemption:" <<<"$t"; then
  pass "explain huge-1: the gang's preemption, none ($(grep "^gang preemption" <<<"$t" | cut -c1-120)); no single-pod preemption shown"
else
  fail "explain huge-1: the gang's preemption, none" "$(cat "$WORK/explain.err"; jq -c '{preemption, g: .gang.preemption}' <<<"${j:-null}" 2>&1; echo "${t:-}")"
fi
kubectl delete podgroups.scheduling.x-k8s.io -n "$NS" huge --wait=false >/dev/null 2>&1
kubectl delete pods -n "$NS" -l tarema.io/gang-e2e=huge --wait=false >/dev/null 2>&1
check "the huge gang is gone" wait_for 60 count_is huge 0

# ---- 2. 12 x 1 core: lowa goes whole, lowb stays ------------------------------------------------
# explain first, on a copy no scheduler takes (pending, not gated: explain tries it as the live one)
GANG_SCHED="nobody-$ID"
check "gang probe created (12 x 1 core, class high, scheduler nobody)" gang_for probe 12 1 high
if j=$(explain probe-1 -o json) &&
  jq -e --arg g "podgroup/$NS/lowa" '.preemption == null and .gang.preemption.wouldPreempt and
      ([.gang.preemption.victims[] | select(.gang == $g and (.pod | test("/lowa-[0-9]+$")))] | length) == 6 and
      (.gang.preemption.victims | length) == 6 and .gang.preemption.gangs == 1 and
      ([.gang.preemption.members[] | select(.node != null)] | length) == 12' <<<"$j" >/dev/null &&
  t=$(explain probe-1) && grep -q "^gang preemption: evicting 6 pod(s) (1 gang(s) whole" <<<"$t" &&
  [ "$(grep -c "^  evict $NS/lowa-[0-9]* on .*with its whole gang podgroup/$NS/lowa" <<<"$t")" = 6 ]; then
  pass "explain probe-1 (the 12-pod gang): evict lowa's 6 pods as one gang, a node for each of the 12 members"
  grep -A3 "^gang preemption" <<<"$t" | sed 's/^/#   /'
else
  fail "explain probe-1: evict lowa's 6 pods as one gang" "$(cat "$WORK/explain.err"; jq -c '{preemption, g: .gang.preemption}' <<<"${j:-null}" 2>&1; echo "${t:-}")"
fi
if bound_is lowa 6 && [ -z "$(events_of Preempted)" ]; then pass "explain evicted nothing"; else fail "explain evicted nothing" "$(events_of Preempted)"; fi
kubectl delete podgroups.scheduling.x-k8s.io -n "$NS" probe --wait=false >/dev/null 2>&1
kubectl delete pods -n "$NS" -l tarema.io/gang-e2e=probe --wait=false >/dev/null 2>&1
check "the probe gang is gone" wait_for 60 count_is probe 0
check "gang hi created (12 x 1 core(s), class high)" gang hi 12 1 high
if wait_for 90 bound_is hi 12; then
  pass "the 12 pods of gang hi (priority 1000) are bound"
else
  fail "the 12 pods of gang hi (priority 1000) are bound" \
    "$(kubectl get pods -n "$NS" -o wide; grep -i preempt "$WORK/sched.log" | tail -n 5)"
fi
if wait_for 30 count_is lowa 0; then pass "lowa was evicted whole (all 6 pods)"; else fail "lowa was evicted whole (all 6 pods)" "$(kubectl get pods -n "$NS" -o wide)"; fi
if bound_is lowb 4; then pass "lowb (not needed once lowa is gone) stays: 4 bound"; else fail "lowb stays" "$(kubectl get pods -n "$NS" -o wide)"; fi
pre=$(events_of Preempted)
n_pod_ev=$(grep -c "^lowa-[0-9]* Preempted by pod " <<<"$pre")
if [ "$n_pod_ev" -eq 6 ]; then
  pass "each of lowa's 6 pods has a Preempted event (\"Preempted by pod <uid> on node <node>\")"
else
  fail "each of lowa's 6 pods has a Preempted event" "$pre"
fi
if grep -q "^lowa preempted whole by gang podgroup/$NS/hi (priority 1000)" <<<"$pre"; then
  pass "lowa's PodGroup: Preempted, whole, by gang hi"
else
  fail "lowa's PodGroup: Preempted, whole, by gang hi" "$pre"
fi
if ! grep -q "^lowb" <<<"$pre"; then pass "no Preempted event about lowb"; else fail "no Preempted event about lowb" "$pre"; fi
if events_of Preempting | grep -q "^hi preemption: evicting 6 pod(s) (1 gang(s) whole, 0 single pod(s)) of priority < 1000"; then
  pass "hi's PodGroup: Preempting, 6 pods of 1 gang"
else
  fail "hi's PodGroup: Preempting, 6 pods of 1 gang" "$(events_of Preempting)"
fi
if preempt_metric_above preempting 0; then pass "tarema_gang_preemptions_total{result=\"preempting\"} counted it"; else fail "tarema_gang_preemptions_total{result=\"preempting\"} counted it" "$(preempt_metric preempting)"; fi
check "no node over-committed" check_fit

# ---- 3. a single pod takes a running gang whole: lowb goes, all 4 -------------------------------
solo_json() {
  pod_json "$NS" solo "$SCHED" 1 64Mi '{}' "$ID" |
    jq -c --arg id "$ID" '.spec.priorityClassName = "\($id)-high" | .spec.nodeSelector = {"tarema.io/e2e": $id}'
}
# explain first, on a copy no scheduler takes: what the live scheduler would evict, lowb whole
solo_probe() { solo_json | jq -c --arg s "nobody-$ID" '.metadata.name = "solo-probe" | .spec.schedulerName = $s'; }
check "pod solo-probe created (as solo, scheduler nobody)" eval 'solo_probe | kubectl create -f - >/dev/null'
if j=$(explain solo-probe -o json) &&
  jq -e '(.preemption.nominated | type) == "string" and
      ([.preemption.victims[] | select(.pod | test("/lowb-[0-9]+$"))] | length) == 4 and
      (.preemption.victims | length) == 4 and
      ([.preemption.victims[] | select(.why | startswith("member of gang podgroup/"))] | length) == 3' <<<"$j" >/dev/null &&
  t=$(explain solo-probe) && grep -q "^preemption: would nominate .* and evict $NS/lowb-" <<<"$t"; then
  pass "explain solo-probe: lowb's 4 pods, one chosen and 3 members with it ($(grep "^preemption:" <<<"$t" | cut -c1-110))"
else
  fail "explain solo-probe: lowb's 4 pods, one chosen and 3 members with it" "$(cat "$WORK/explain.err"; jq -c '.preemption' <<<"${j:-null}" 2>&1 | head -c 800)"
fi
kubectl delete pod -n "$NS" solo-probe --wait=false >/dev/null 2>&1
if solo_json | kubectl create -f - >/dev/null; then pass "pod solo created (1 core, class high, no gang)"; else fail "pod solo created (1 core, class high, no gang)" "$(solo_json)"; fi
solo_bound() { [ -n "$(kubectl get pod -n "$NS" solo -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ]; }
if wait_for 90 solo_bound; then
  pass "solo (priority 1000) is bound"
else
  fail "solo (priority 1000) is bound" "$(kubectl get pods -n "$NS" -o wide; grep -i preempt "$WORK/sched.log" | tail -n 5)"
fi
if wait_for 30 count_is lowb 0; then
  pass "lowb was evicted whole by a single pod (all 4 pods, not one member)"
else
  fail "lowb was evicted whole by a single pod (all 4 pods)" "$(kubectl get pods -n "$NS" -o wide)"
fi
if bound_is hi 12; then pass "hi (priority 1000, the preemptor's) stays: 12 bound"; else fail "hi stays" "$(kubectl get pods -n "$NS" -o wide)"; fi
pre=$(events_of Preempted)
n_pod_ev=$(grep -c "^lowb-[0-9]* Preempted by pod " <<<"$pre")
if [ "$n_pod_ev" -eq 4 ]; then
  pass "each of lowb's 4 pods has a Preempted event"
else
  fail "each of lowb's 4 pods has a Preempted event" "$pre"
fi
if grep -q "^lowb preempted whole by pod $NS/solo (priority 1000): " <<<"$pre"; then
  pass "lowb's PodGroup: Preempted, whole, by pod solo ($(grep "^lowb preempted whole" <<<"$pre" | head -n 1 | cut -c1-120))"
else
  fail "lowb's PodGroup: Preempted, whole, by pod solo" "$pre"
fi
check "no node over-committed after solo" check_fit

summary
