#!/usr/bin/env bash
# tests/e2e/gang_reference_kube_scheduler_test.sh: the gang scenarios of issue 14 run through
# kube-scheduler 1.35's own GangScheduling (Workload API gangs), the reference tarema's gangs
# are compared with. Each scenario gets its own copy of the paper cluster (5 e2 + 4 n1 6-cpu,
# 4 n2 8-cpu, 2 c2 16-cpu kwok nodes; tainted and labelled for it) and its own namespace:
#   A  gangs of 3, 4, 5, 8, 10, 12, 16 and 20 pods (minCount = size, 1 cpu each) that all fit:
#      all or nothing sampled the whole time; a gang with fewer pods than its minCount (4 of 5)
#      and one larger than its minCount (6, min 4); then the 5th pod of the short gang arrives;
#   B  two gangs of 15 pods of 4 cpu created interleaved on 25 slots of 4 cpu: each fits alone,
#      not both. Watched for GANG_REF_OBSERVE_S; then the first gang is deleted and the time
#      the second needs to complete is recorded;
#   C  a gang of 30 pods of 4 cpu that can never fit (25 slots), started first, and a plain
#      4-cpu pod once kube-scheduler has acted on the gang: is capacity held for the waiting gang, does the plain pod wait,
#      and does the gang time out (kube-scheduler documents a fixed 5-minute Permit wait) within
#      GANG_REF_TIMEOUT_WAIT_S of its creation.
# What kube-scheduler does is recorded, not judged: a deadlock or a partial bind is printed as
# the observed behaviour (in the check's name, and as `observed:` lines in GANG_REF_REPORT if
# set), never a failure. The test fails only when a scenario could not be run: the Workload API
# or kube-scheduler missing, objects refused, the scheduler never attempting the pods, the
# all-or-nothing monitor not sampling.
# kube-scheduler 1.35's Permit wait is a constant of its GangScheduling plugin (5 minutes; the
# plugin takes no arguments, so no KubeSchedulerConfiguration can shorten it). Waiting it out
# is what recording the reference is about, not what `make test` checks (no check above depends
# on it), so it is waited for only in a recording run:
#   GANG_REF_FULL=1              B watched and C's timeout waited for past the 5 minutes (implied
#                                by GANG_REF_REPORT, whose lines docs/operations.md quotes)
#   GANG_REF_OBSERVE_S           how long scenario B is watched for a gang to complete
#                                (330 with GANG_REF_FULL, else 30: the deadlock is still seen)
#   GANG_REF_TIMEOUT_WAIT_S      how long after its creation C's timeout is waited for (400 with
#                                GANG_REF_FULL, else 0: C's state is recorded without waiting)
# e2e-run: alone (tests/run.sh runs it with no other test beside it): needs kube-scheduler stopped and runs it with its own profile only
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gang_lib.sh"
REPORT=${GANG_REF_REPORT:-}
FULL=${GANG_REF_FULL:-0}
[ -n "$REPORT" ] && FULL=1
if [ "$FULL" = 1 ]; then
  OBSERVE_S=${GANG_REF_OBSERVE_S:-330}
  TIMEOUT_WAIT_S=${GANG_REF_TIMEOUT_WAIT_S:-400}
else
  OBSERVE_S=${GANG_REF_OBSERVE_S:-30}
  TIMEOUT_WAIT_S=${GANG_REF_TIMEOUT_WAIT_S:-0}
  echo "# kube-scheduler's 5-minute Permit timeout is not waited for (GANG_REF_FULL=1 or GANG_REF_REPORT=FILE records it)"
fi
ID=$(printf '%05d' $((RANDOM % 100000)))
SCHED=gang-ref-$ID
P=gr$ID # node prefix
WORK=$(mktemp -d)
STARTED_KS=0
[ -n "$REPORT" ] && : >"$REPORT"

cleanup() {
  [ -n "${GANG_MON_PID:-}" ] && { touch "$GANG_MON_FILE.stop"; wait "$GANG_MON_PID" 2>/dev/null; }
  [ "$STARTED_KS" = 1 ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  kubectl delete namespace "$P-a" "$P-b" "$P-c" --wait=false >/dev/null 2>&1
  kubectl get nodes -o name 2>/dev/null | grep "^node/$P" | xargs -r kubectl delete --wait=false >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# observe TEXT: what kube-scheduler did, for people and for GANG_REF_REPORT.
observe() {
  echo "# observed: $*"
  [ -n "$REPORT" ] && echo "observed: $*" >>"$REPORT"
  return 0
}
abort() { fail "$1" "$2"; summary; exit 1; }

[ -n "${KUBECONFIG:-}" ] || abort "environment" "KUBECONFIG is not set: run via tests/run.sh e2e or eval \"\$(hack/cluster.sh env)\""
gang_skip_on_native "the kube-scheduler gang reference (1.35 GangScheduling)"
why=$(gang_require_api workload) || abort "the Workload API is served" "$why"
pass "the Workload API is served"
if bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep 'scheduler.*running (pid'; then
  abort "kube-scheduler of this cluster is free for the test" "another test left it running (hack/cluster.sh scheduler stop)"
fi
cat >"$WORK/ks.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: $SCHED
EOF
bash "$REPO_ROOT/hack/cluster.sh" scheduler start "$WORK/ks.yaml" >"$WORK/ks.out" 2>&1 ||
  abort "kube-scheduler starts with GangScheduling" "$(tail -n 5 "$WORK/ks.out")"
STARTED_KS=1
KS_PID=$(cat "$TAREMA_CLUSTER_DIR/run/scheduler.pid")
tr '\0' '\n' <"/proc/$KS_PID/cmdline" | qgrep -- '--feature-gates=.*GangScheduling=true' ||
  abort "kube-scheduler starts with GangScheduling" "no GangScheduling gate: $(tr '\0' ' ' <"/proc/$KS_PID/cmdline")"
KS_VERSION=$("$(tr '\0' '\n' <"/proc/$KS_PID/cmdline" | head -n 1)" --version 2>/dev/null | awk '{print $2}')
pass "kube-scheduler $KS_VERSION starts with GangScheduling (profile $SCHED)"
[ -n "$REPORT" ] && echo "reference: kube-scheduler $KS_VERSION, feature gates GenericWorkload+GangScheduling, Workload API gangs" >>"$REPORT"

# One copy of the paper cluster per scenario, tainted and labelled so that only its pods land.
for s in a b c; do
  cat <<EOF
  - {prefix: $P$s-e2, count: 5, cpu: 6, memory: 16Gi, pods: 110, labels: {tarema.io/machine-type: e2, tarema.io/gang-ref: "$P$s"}, taints: [{key: tarema.io/gang-ref, value: "$P$s", effect: NoSchedule}]}
  - {prefix: $P$s-n1, count: 4, cpu: 6, memory: 16Gi, pods: 110, labels: {tarema.io/machine-type: n1, tarema.io/gang-ref: "$P$s"}, taints: [{key: tarema.io/gang-ref, value: "$P$s", effect: NoSchedule}]}
  - {prefix: $P$s-n2, count: 4, cpu: 8, memory: 32Gi, pods: 110, labels: {tarema.io/machine-type: n2, tarema.io/gang-ref: "$P$s"}, taints: [{key: tarema.io/gang-ref, value: "$P$s", effect: NoSchedule}]}
  - {prefix: $P$s-c2, count: 2, cpu: 16, memory: 64Gi, pods: 110, labels: {tarema.io/machine-type: c2, tarema.io/gang-ref: "$P$s"}, taints: [{key: tarema.io/gang-ref, value: "$P$s", effect: NoSchedule}]}
EOF
done | sed '1i nodes:' >"$WORK/nodes.yaml"
bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml" >"$WORK/nodes.out" 2>&1 ||
  abort "three copies of the paper cluster (45 kwok nodes)" "$(tail -n 3 "$WORK/nodes.out")"
pass "three copies of the paper cluster (45 kwok nodes)"
for s in a b c; do
  kubectl create namespace "$P-$s" >/dev/null || abort "namespaces" "cannot create $P-$s"
done
for s in a b c; do wait_for 30 kubectl get serviceaccount default -n "$P-$s" || abort "namespaces" "no default ServiceAccount in $P-$s"; done

# pool_patch S: the GANG_POD_PATCH that puts a pod on scenario S's nodes only.
pool_patch() {
  echo ".spec.nodeSelector = {\"tarema.io/gang-ref\": \"$P$1\"} | .spec.tolerations = [{key: \"tarema.io/gang-ref\", operator: \"Equal\", value: \"$P$1\", effect: \"NoSchedule\"}]"
}
# create_json FILE WHAT: kubectl create of a file of JSON lines, or abort.
create_json() { kubectl create -f "$1" >"$WORK/create.out" 2>&1 || abort "$2: objects created" "$(tail -n 3 "$WORK/create.out")"; }
# attempted NS: pods of NS that kube-scheduler acted on (bound, or a FailedScheduling event).
attempted() {
  local ev
  ev=$(kubectl get events.events.k8s.io -n "$1" -o json | jq -r '[.items[] | select(.reason == "FailedScheduling" or .reason == "Scheduled") | .regarding.name] | unique | .[]')
  { kubectl get pods -n "$1" -o json | jq -r '.items[] | select((.spec.nodeName // "") != "") | .metadata.name'; echo "$ev"; } | grep . | sort -u | wc -l
}
# plain_pod NS NAME CPU S: a pod of no gang on scenario S's nodes.
plain_pod() {
  GANG_POD_PATCH="$(pool_patch "$4") | .metadata.labels = {} | del(.spec.workloadRef) | .metadata.name = \"$2\"" \
    gang_pods_json workload "$1" plain 1 1 "$SCHED" "$3" 1Gi
}
pod_node() { kubectl get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }

c_gang_attempted() { [ "$(attempted "$P-c")" -gt 0 ]; }

# ---- C (started first: its timeout is the long wait) ------------------------------------------
NC=$P-c
C_T0=$(date +%s)
{
  gang_group_json workload "$NC" never 30
  GANG_POD_PATCH=$(pool_patch c) gang_pods_json workload "$NC" never 1 30 "$SCHED" 4 1Gi
} >"$WORK/c.json"
create_json "$WORK/c.json" "C: a gang of 30 x 4 cpu on 25 slots"
pass "C: a gang of 30 x 4 cpu that never fits (25 slots) created"
# The plain pod comes once kube-scheduler has acted on the gang (its members hold capacity or
# were refused), not after a fixed pause.
wait_for 30 c_gang_attempted
C_PLAIN_S=$(($(date +%s) - C_T0))
plain_pod "$NC" plain-c 4 c >"$WORK/cp.json"
create_json "$WORK/cp.json" "C: a plain 4-cpu pod next to the waiting gang"

# ---- A: gangs of 3..20 that fit --------------------------------------------------------------
NA=$P-a
SIZES=(3 4 5 8 10 12 16 20)
{
  for n in "${SIZES[@]}"; do gang_group_json workload "$NA" "g$n" "$n"; done
  gang_group_json workload "$NA" short 5
  gang_group_json workload "$NA" wide 4
  export GANG_POD_PATCH
  GANG_POD_PATCH=$(pool_patch a)
  for n in "${SIZES[@]}"; do gang_pods_json workload "$NA" "g$n" 1 "$n" "$SCHED" 1 512Mi; done
  gang_pods_json workload "$NA" short 1 4 "$SCHED" 1 512Mi
  gang_pods_json workload "$NA" wide 1 6 "$SCHED" 1 512Mi
  unset GANG_POD_PATCH
} >"$WORK/a.json"
gang_aon_monitor_start "$NA" "$WORK/mon-a" 0.5
A_T0=$(date +%s.%N)
create_json "$WORK/a.json" "A: gangs of 3..20"
pass "A: gangs of 3, 4, 5, 8, 10, 12, 16, 20, a short one (4 of min 5) and a wide one (6, min 4) created"
full_bound() { gang_counts "$NA" | awk '$1 ~ /^wl:g[0-9]+\// && $2 == $3 {n++} END {exit n == '"${#SIZES[@]}"' ? 0 : 1}'; }
if wait_for 120 full_bound; then
  A_T1=$(date +%s.%N)
  observe "A: all ${#SIZES[@]} gangs of 3..20 fully bound $(printf '%.1f' "$(echo "$A_T1 - $A_T0" | bc)") s after creation"
fi
# An observation window, not a negative check: the figures below are observed (printed), not
# asserted; the short gang is given 3 s to show what kube-scheduler does with it.
sleep 3
gang_counts "$NA" >"$WORK/a.counts.raw" || abort "A: the gangs' pods listed" "listing the pods of $NA failed"
sort "$WORK/a.counts.raw" >"$WORK/a.counts"
out=$(gang_aon_monitor_stop); rc=$?
[ $rc = 2 ] && abort "A: the all-or-nothing monitor sampled" "$out"
n_att=$(attempted "$NA")
[ "$n_att" -gt 0 ] || abort "A: kube-scheduler attempted the pods" "no pod bound and no FailedScheduling event in $NA"
pass "A: scenario ran (kube-scheduler acted on $n_att pods; monitor $out)"
for n in "${SIZES[@]}"; do
  read -r _ b t m < <(grep "^wl:g$n/" "$WORK/a.counts") || { b=0; t=0; m=$n; }
  observe "A: gang of $n (minCount $m): $b of $t bound"
done
read -r _ b t m < <(grep '^wl:short/' "$WORK/a.counts") || { b=?; t=?; m=5; }
observe "A: gang with 4 pods of minCount 5: $b bound (PreEnqueue holds it while it has fewer pods than minCount)"
read -r _ b t m < <(grep '^wl:wide/' "$WORK/a.counts") || { b=?; t=?; m=4; }
observe "A: gang of 6 pods, minCount 4: $b of $t bound"
if [ $rc = 0 ]; then observe "A: all or nothing held ($out)"; else observe "A: all or nothing VIOLATED ($out)"; fi
GANG_POD_PATCH=$(pool_patch a) gang_pods_json workload "$NA" short 5 5 "$SCHED" 1 512Mi >"$WORK/a5.json"
create_json "$WORK/a5.json" "A: the short gang's 5th pod"
if gang_wait_bound "$NA" wl:short/gang 5 60; then observe "A: the 5th pod completes the short gang: all 5 bound"; else observe "A: the 5th pod did not complete the short gang within 60 s: $(gang_bound "$NA" wl:short/gang) bound"; fi
pass "A: the short gang's 5th pod created"

# ---- B: two interleaved gangs that fit alone, not together -----------------------------------
NB=$P-b
{
  gang_group_json workload "$NB" first 15
  gang_group_json workload "$NB" second 15
  export GANG_POD_PATCH
  GANG_POD_PATCH=$(pool_patch b)
  paste -d '\n' <(gang_pods_json workload "$NB" first 1 15 "$SCHED" 4 1Gi) <(gang_pods_json workload "$NB" second 1 15 "$SCHED" 4 1Gi)
  unset GANG_POD_PATCH
} >"$WORK/b.json"
gang_aon_monitor_start "$NB" "$WORK/mon-b" 1
B_T0=$(date +%s)
create_json "$WORK/b.json" "B: two interleaved gangs of 15 x 4 cpu on 25 slots"
pass "B: two gangs of 15 x 4 cpu created interleaved on 25 slots"
one_done() { gang_counts "$NB" | awk '$2 == $3 {n++} END {exit n >= 1 ? 0 : 1}'; }
if wait_for "$OBSERVE_S" one_done; then
  observe "B: a gang completed $(($(date +%s) - B_T0)) s after creation: $(gang_counts "$NB" | awk '{printf "%s %d/%d; ", $1, $2, $3}')"
  tmo=$(kubectl get events.events.k8s.io -n "$NB" -o json | jq '[.items[] | select(.note | test("timeout"; "i"))] | length')
  [ "$tmo" -gt 0 ] && observe "B: it completed only after $tmo Permit timeout event(s) in the namespace (the two gangs held each other's capacity until then)"
else
  nominated=$(kubectl get pods -n "$NB" -o json | jq '[.items[] | select((.status.nominatedNodeName // "") != "")] | length')
  observe "B: DEADLOCK for ${OBSERVE_S} s: neither gang complete ($(gang_counts "$NB" | awk '{printf "%s %d/%d bound; ", $1, $2, $3}')$nominated pods hold a nominated node while waiting)"
fi
n_att=$(attempted "$NB")
[ "$n_att" -gt 0 ] || abort "B: kube-scheduler attempted the pods" "no pod bound and no FailedScheduling event in $NB"
# Unblock: the first gang goes; how long until the second completes?
kubectl delete pods -n "$NB" -l tarema.io/gang-e2e=first --wait=false >/dev/null
kubectl delete workload -n "$NB" first --wait=false >/dev/null
B_T1=$(date +%s)
second_done() { [ "$(gang_bound "$NB" wl:second/gang)" -ge 15 ]; }
if wait_for 90 second_done; then
  observe "B: after the first gang was deleted, the second completed in $(($(date +%s) - B_T1)) s"
else
  observe "B: 90 s after the first gang was deleted, the second still has $(gang_bound "$NB" wl:second/gang) of 15 bound"
fi
out=$(gang_aon_monitor_stop); rc=$?
[ $rc = 2 ] && abort "B: the all-or-nothing monitor sampled" "$out"
if [ $rc = 0 ]; then observe "B: all or nothing held ($out)"; else observe "B: all or nothing VIOLATED ($out)"; fi
pass "B: scenario ran (kube-scheduler acted on $n_att pods; first gang deleted to unblock)"

# ---- C: after the wait -----------------------------------------------------------------------
c_state() {
  local nom
  nom=$(kubectl get pods -n "$NC" -o json | jq '[.items[] | select(.metadata.name | startswith("never-")) | select((.status.nominatedNodeName // "") != "")] | length')
  echo "gang $(gang_bound "$NC" wl:never/gang)/30 bound, $nom pods with a nominated node; plain pod on '$(pod_node "$NC" plain-c)'"
}
observe "C: $(( $(date +%s) - C_T0 )) s after creation: $(c_state)"
n_att=$(attempted "$NC")
[ "$n_att" -gt 0 ] || abort "C: kube-scheduler attempted the pods" "no pod bound and no FailedScheduling event in $NC"
# since_c TIME: seconds from C's creation to an API timestamp (fractions dropped).
since_c() { echo $(( $(date -d "$1" +%s) - C_T0 )); }
timeout_events() {
  kubectl get events.events.k8s.io -n "$NC" -o json |
    jq -c '[.items[] | select(.regarding.name | startswith("never-")) | select(.note | test("timeout|timed out"; "i"))
            | {t: (.eventTime // .series.lastObservedTime // .metadata.creationTimestamp), reason, note}] | sort_by(.t)'
}
timed_out() { [ "$(timeout_events | jq length)" -gt 0 ]; }
left=$((C_T0 + TIMEOUT_WAIT_S - $(date +%s)))
[ $left -lt 1 ] && left=1
if [ "$TIMEOUT_WAIT_S" = 0 ]; then
  timed_out && t_timeout=$(since_c "$(timeout_events | jq -r '.[0].t')") || t_timeout=
  observe "C: timeout not waited for (GANG_REF_FULL=1 waits): $(c_state)"
elif wait_for "$left" timed_out; then
  ev=$(timeout_events)
  t_timeout=$(since_c "$(jq -r '.[0].t' <<<"$ev")")
  n_tmo=$(jq length <<<"$ev")
  first=$(jq -r '.[0] | "\(.reason): \(.note)"' <<<"$ev")
  observe "C: the gang's Permit wait timed out $t_timeout s after its creation ($n_tmo pods): $first"
else
  observe "C: no Permit timeout event within ${TIMEOUT_WAIT_S} s of creation: $(c_state)"
  t_timeout=
fi
sched_t=$(kubectl get pod -n "$NC" plain-c -o json | jq -r '.status.conditions[]? | select(.type == "PodScheduled" and .status == "True") | .lastTransitionTime')
if [ -n "$sched_t" ]; then
  t_plain=$(since_c "$sched_t")
  if [ -n "$t_timeout" ] && [ "$t_plain" -ge "$t_timeout" ]; then
    observe "C: the plain 4-cpu pod (created at $C_PLAIN_S s) waited behind the never-fitting gang's held capacity and was bound at $t_plain s, after the gang's timeout"
  else
    observe "C: the plain 4-cpu pod (created at $C_PLAIN_S s) was bound at $t_plain s${t_timeout:+, before the timeout of the gang at $t_timeout s}"
  fi
else
  observe "C: the plain 4-cpu pod (created at $C_PLAIN_S s) is still unbound after $(( $(date +%s) - C_T0 )) s"
fi
observe "C: at the end ($(( $(date +%s) - C_T0 )) s): $(c_state)"
pass "C: scenario ran (kube-scheduler acted on $n_att pods, watched $(( $(date +%s) - C_T0 )) s)"
ks_alive() { kill -0 "$KS_PID" 2>/dev/null; }
if ks_alive; then pass "kube-scheduler still running after the scenarios"; else fail "kube-scheduler still running after the scenarios" "$(tail -n 5 "$TAREMA_CLUSTER_DIR/logs/scheduler.log")"; fi
summary
