#!/usr/bin/env bash
# tests/e2e/scheduler_profiles_test.sh: one tarema-scheduler process serving two profiles
# (kube-scheduler's profiles: spec.schedulerName -> policy and weights, docs/profiles.md),
# against the real API server, on this test's own two tainted 4-core kwok nodes:
#  1. four pods of the first profile (policy fill-nodes) all land on one node
#  2. four pods of the second (--profile NAME=fair), created while those run, spread: each goes
#     to the emptier node, so the other node gets all four
#  3. a pod naming a scheduler nobody serves is left alone: no bind, no event (a later pod of
#     each profile, behind it in any queue order, is bound: the scheduler had its chance at it)
#  4. scheduler_schedule_attempts_total counts each profile's attempts under its own name,
#     `explain` reads a pod with its own profile's policy, and each pod's Scheduled event is
#     reported by its profile's name
#  5. a pod of the second profile preempts: the Preempted events name that profile, as
#     kube-scheduler's per-profile recorders
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin profiles pf
sched_e2e_namespace
SPREAD="$SCHED-spread"
cat >"$WORK/nodes.yaml" <<YAML
nodes:
  - {prefix: ${P}n, count: 2, cpu: 4, memory: 8Gi, pods: 20,
     labels: {tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
YAML
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
if ! start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" --policy fill-nodes \
  --profile "$SPREAD=fair" --leader-elect=false; then
  fail "tarema-scheduler with two profiles starts and becomes ready" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler with two profiles starts and becomes ready"
PORT=$SCHED_PORT

# mkpods PREFIX N SCHEDULER: N pods of 500m of this test (toleration, nodeSelector) for SCHEDULER
mkpods() {
  pods_json "$NS" "$1" "$2" "$3" 500m 256Mi '{}' "$ID" |
    jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e": $id}' | kubectl create -f - >/dev/null
}
# nodes_of PREFIX: the distinct nodes of pods PREFIX-*, one per line (sorted); status 1 when the
# list fails
nodes_of() {
  local j
  j=$(read_ok kubectl get pods -n "$NS" -o json) || return 1
  jq -r --arg p "$1-" '[.items[] | select(.metadata.name | startswith($p)) | .spec.nodeName // ""] | unique | .[]' <<<"$j"
}
# bound_of PREFIX: how many pods PREFIX-* are bound; nothing and status 1 when the list fails
bound_of() {
  local j
  j=$(read_ok kubectl get pods -n "$NS" -o json) || return 1
  jq -r --arg p "$1-" '[.items[] | select((.metadata.name | startswith($p)) and (.spec.nodeName // "") != "")] | length' <<<"$j"
}
all_bound() { [ "$(bound_of "$1")" = "$2" ]; }

# ---- 1. the first profile packs ----------------------------------------------------------------
mkpods pack 4 "$SCHED"
wait_for 60 all_bound pack 4
n=$(nodes_of pack)
if [ "$(bound_of pack)" = 4 ] && [ "$(wc -l <<<"$n")" = 1 ]; then pass "fill-nodes profile: the 4 pods share one node ($n)"; else fail "fill-nodes profile: the 4 pods share one node" "bound $(bound_of pack), nodes: $(tr '\n' ' ' <<<"$n")"; fi
PACKED=$(head -n 1 <<<"$n")

# ---- 2. the second profile spreads: every pod to the emptier node ---------------------------------
mkpods spread 4 "$SPREAD"
wait_for 60 all_bound spread 4
s=$(nodes_of spread)
if [ "$(bound_of spread)" = 4 ] && [ "$(wc -l <<<"$s")" = 1 ] && [ "$s" != "$PACKED" ]; then pass "fair profile: the 4 pods go to the other, emptier node ($s)"; else fail "fair profile: the 4 pods go to the other, emptier node" "bound $(bound_of spread), nodes: $(tr '\n' ' ' <<<"$s"), packed node $PACKED"; fi

# ---- 3. a scheduler name nobody serves ------------------------------------------------------------
# a-stranger sorts before the later pods in any queue (created first; within one second by
# name), so a scheduler that took it would have tried it, and left an event, before binding them
mkpods a-stranger 1 "$SCHED-nobody"
mkpods later-a 1 "$SCHED"
mkpods later-b 1 "$SPREAD"
wait_for 60 all_bound later-a 1
wait_for 60 all_bound later-b 1
stranger_events() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json) || return 1
  jq -r '[.items[] | select(.regarding.name == "a-stranger-1") | .reason] | join(",")' <<<"$ev"
}
se=$(stranger_events)
if [ "$(bound_of later-a)" = 1 ] && [ "$(bound_of later-b)" = 1 ] && [ "$(bound_of a-stranger)" = 0 ] && [ -z "$se" ]; then pass "a pod of another scheduler name is left alone (no bind, no event), pods of both profiles after it are bound"; else fail "a pod of another scheduler name is left alone" "stranger bound $(bound_of a-stranger), its events '$se', later pods $(bound_of later-a)/$(bound_of later-b)"; fi

# ---- 4. metrics by profile, explain by profile ----------------------------------------------------
m=$(read_ok curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics") || m=""
a=$(awk -v k="scheduler_schedule_attempts_total{profile=\"$SCHED\",result=\"scheduled\"}" '$1 == k {print $2}' <<<"$m")
b=$(awk -v k="scheduler_schedule_attempts_total{profile=\"$SPREAD\",result=\"scheduled\"}" '$1 == k {print $2}' <<<"$m")
t=$(awk '$1 == "tarema_schedule_attempts_total{result=\"scheduled\"}" {print $2}' <<<"$m")
# each profile bound 5 pods; a retried bind would count in its own profile and in the total
if [ "${a:-0}" -ge 5 ] && [ "${b:-0}" -ge 5 ] && [ "$((a + b))" = "$t" ]; then pass "scheduler_schedule_attempts_total by profile: $a and $b, summing to tarema's total ($t)"; else fail "scheduler_schedule_attempts_total by profile: 5 and 5 at least, summing to tarema's total" "$SCHED '$a', $SPREAD '$b', total '$t'"; fi
for p in spread-1:fair pack-1:fill-nodes; do
  if ex=$("$BIN/tarema-scheduler" explain "$NS/${p%%:*}" -o json --scheduler-name "$SCHED" --policy fill-nodes --profile "$SPREAD=fair" 2>"$WORK/explain.err") &&
    [ "$(jq -r .policy <<<"$ex" 2>/dev/null)" = "${p#*:}" ]; then pass "explain reads ${p%%:*} with its own profile's policy (${p#*:})"; else fail "explain reads ${p%%:*} with its own profile's policy (${p#*:})" "$(head -c 400 <<<"$ex") $(tail -n 3 "$WORK/explain.err")"; fi
done
# the Scheduled events: each reported by its pod's profile (kube-scheduler's per-profile recorders)
reporters() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json) || return 1
  jq -r --arg n "$1" '[.items[] | select(.regarding.name == $n and .reason == "Scheduled") | .reportingController] | unique | join(",")' <<<"$ev"
}
have_events() { [ -n "$(reporters spread-1)" ] && [ -n "$(reporters pack-1)" ]; }
wait_for 30 have_events
r1=$(reporters pack-1) r2=$(reporters spread-1)
if [ "$r1" = "$SCHED" ] && [ "$r2" = "$SPREAD" ]; then pass "each Scheduled event is reported by its pod's profile"; else fail "each Scheduled event is reported by its pod's profile" "pack-1 '$r1', spread-1 '$r2'"; fi

# ---- 5. preemption by a pod of the second profile: its events name that profile --------------
# the spread node holds 5 pods of 500m (2.5 of 4 cores) of priority 0; a pod of priority 1000 and
# 3 cores, of the second profile, only fits there once two of them are gone
PC=tarema-pf-$ID
extra_cleanup() { kubectl delete priorityclass "$PC" --wait=false >/dev/null 2>&1 || true; }
priority_classes "$PC" 1000
SNODE=$(nodes_of spread)
pods_json "$NS" urgent 1 "$SPREAD" 3 256Mi '{}' "$ID" |
  jq -c --arg n "$SNODE" --arg pc "$PC" '.spec.nodeSelector = {"kubernetes.io/hostname": $n} | .spec.priorityClassName = $pc' |
  kubectl create -f - >/dev/null
preempted_by() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json) || return 1
  jq -r '[.items[] | select(.reason == "Preempted") | .reportingController] | unique | join(",")' <<<"$ev"
}
have_preempted() { [ -n "$(preempted_by)" ]; }
wait_for 60 have_preempted
pb=$(preempted_by)
if [ "$pb" = "$SPREAD" ]; then pass "a preemption by a pod of the second profile: its Preempted events come from that profile"; else
  fail "a preemption by a pod of the second profile: its Preempted events come from that profile" "events from '$pb'"
fi
check "the preemptor binds on the spread node" wait_for 60 all_bound urgent 1
check "no node over-committed" check_fit
stop_schedulers
summary
