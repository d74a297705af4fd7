#!/usr/bin/env bash
# tests/e2e/gang_podgroup_test.sh: all-or-nothing gangs declared as scheduler-plugins PodGroups
# (scheduling.x-k8s.io/v1alpha1), tarema-scheduler against the real control plane, on this
# test's own copy of the paper cluster (5;4;4;2 nodes of four machine types, tarema labels per
# group, tainted so only this test's pods use them):
#  1. gangs of 3, 8 and 20 pods: all bound; a gang of the fast task stays in the c2 group;
#     the 20-pod gang that no group holds whole spills (c2 full first, then the next group)
#  2. a gang larger than the free capacity: none bound, PodGroup phase Scheduling with the
#     reason in status.message, FailedScheduling event on the PodGroup; nothing held (a plain
#     pod still fits where the gang would have gone)
#  3. two gangs that each fit alone but not together, created interleaved: one completes, the
#     other waits whole; after the first is deleted, the second completes (no deadlock); the
#     all-or-nothing monitor sees no partly bound gang
#  4. timeout: a gang with scheduleTimeoutSeconds 2 that cannot fit gets a Timeout event and
#     keeps waiting whole
#  5. status: a bound gang's PodGroup reaches Scheduled then Running with scheduled/running counts
#  6. bad input: minMember 0 -> phase Failed, the message in status and an Invalid event, its pod
#     never bound; minMember 5 with 3 pods -> waits with "waiting for 2 more pod(s)", none bound;
#     minResources above the cluster's free cpu -> waits with the minResources message
#  7. restart: the scheduler is killed (SIGKILL) while 4 gangs of 6 are being placed and
#     started again; every gang ends whole, no node over its allocatable (check_fit), no pod
#     bound twice
#  8. explain shows a waiting member's gang, its phase and why it waits
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"

sched_e2e_begin gang gg
extra_cleanup() { [ -n "${GANG_MON_PID:-}" ] && kill "$GANG_MON_PID" 2>/dev/null; true; }
if ! why=$(gang_require_api podgroup); then fail "the PodGroup API is served" "$why"; summary; exit 1; fi
pass "the PodGroup API is served (CRD from charts/tarema/crds)"
sched_e2e_namespace

# The paper cluster's shape: e2 5 x 6 cores, n1 4 x 6, n2 4 x 8, c2 2 x 16 (118 cores).
node_group() { # prefix count cpu memory labels(c,m,i)
  local t="taints: [{key: tarema.io/e2e, value: \"$ID\", effect: NoSchedule}]"
  echo "  - {prefix: ${P}$1, count: $2, cpu: $3, memory: $4, pods: 110,"
  echo "     labels: {tarema.io/cpu: \"$5\", tarema.io/mem: \"$6\", tarema.io/io: \"$7\", tarema.io/group: \"$1\", tarema.io/e2e: \"$ID\"}, $t}"
}
{
  echo "nodes:"
  node_group e2 5 6 16Gi 1 1 1
  node_group n1 4 6 16Gi 2 1 2
  node_group n2 4 8 32Gi 2 3 2
  node_group c2 2 16 64Gi 3 3 3
} >"$WORK/nodes.yaml"
check "paper-shaped test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"

if ! start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" --qps 2000 --burst 4000; then
  fail "tarema-scheduler starts and becomes ready" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler starts and becomes ready"
PORT=$SCHED_PORT

# Every pod goes only to this test's nodes (toleration + nodeSelector) and carries the task
# labels of $TASK (c m i).
TASK="3 3 3"
patch() {
  set -- $TASK
  echo ".spec.tolerations = [{key: \"tarema.io/e2e\", operator: \"Equal\", value: \"$ID\", effect: \"NoSchedule\"}]
        | .spec.nodeSelector = {\"tarema.io/e2e\": \"$ID\"}
        | .metadata.annotations = {\"tarema.io/cpu\": \"$1\", \"tarema.io/mem\": \"$2\", \"tarema.io/io\": \"$3\"}"
}
# Bound members of gang NAME, read by label (gang_lib's gang_bound reads the whole namespace);
# nothing and status 1 when the list fails (count_lines: an API error is not "none bound").
bound_of() {
  count_lines kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'
}
# bound_is NAME N: gang NAME has exactly N members bound, read successfully.
bound_is() { local b; b=$(bound_of "$1") && [ "$b" = "$2" ]; }
mk() { # name size min cpu
  GANG_POD_PATCH=$(patch) gang_create podgroup "$NS" "$1" "$2" "$3" "$SCHED" "$4" 64Mi
}
groups_of() { # gang name -> "group count" lines
  kubectl get pods -n "$NS" -l "tarema.io/gang-e2e=$1" -o json |
    jq -r --arg p "$P" '.items[] | .spec.nodeName // "" | select(. != "") | ltrimstr($p) | sub("-[0-9]+$"; "")' | sort | uniq -c | awk '{print $2, $1}'
}
wait_bound() { # NAME N SECONDS
  local deadline=$(($(date +%s) + $3)) b
  until b=$(bound_of "$1") && [ "$b" -ge "$2" ]; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
pg_field() { read_jq "$2" kubectl get podgroups.scheduling.x-k8s.io -n "$NS" "$1" -o json; }
pg_events() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json) || return 1
  jq -r --arg n "$1" '.items[] | select(.regarding.kind == "PodGroup" and .regarding.name == $n) | "\(.reason): \(.note)"' <<<"$ev"
}
# no_pods: the namespace lists no pod (a failed list is not "none")
no_pods() { [ "$(count_lines kubectl get pods -n "$NS" -o name)" = 0 ]; }

gang_aon_monitor_start "$NS" "$WORK/aon"

# ---- 1. gangs of 3, 8 and 20 --------------------------------------------------------------------
mk g3 3 3 2
mk g8 8 8 1
if wait_bound g3 3 60 && wait_bound g8 8 60; then pass "gangs of 3 and 8 bound whole"; else fail "gangs of 3 and 8 bound whole" "$(gang_counts "$NS")"; fi
g=$(groups_of g3 | tr '\n' ' ')
if [ "$g" = "c2 3 " ]; then pass "the gang of the fast task stays in group c2"; else fail "the gang of the fast task stays in group c2" "groups: $g"; fi
g=$(groups_of g8 | tr '\n' ' ')
if [ "$g" = "c2 8 " ]; then pass "the second gang of the fast task stays in group c2 too"; else fail "the second gang of the fast task stays in group c2 too" "groups: $g"; fi
# c2 has 32 - 6 - 8 = 18 cores left (8 or 9 pods of 2, as the odd cores fall): 20 pods of 2
# cores cannot stay in one group; the best group for the task after c2 is n2 (distance 2).
mk g20 20 20 2
if wait_bound g20 20 60; then pass "gang of 20 bound whole"; else fail "gang of 20 bound whole" "$(gang_counts "$NS")"; fi
g=$(groups_of g20 | tr '\n' ' ')
c2=$(groups_of g20 | awk '$1 == "c2" {print $2}')
if [ "${c2:-0}" -ge 8 ] && [ "$(groups_of g20 | awk '$1 != "c2" {print $1}')" = n2 ]; then pass "gang of 20 spills only as it must: c2 filled first ($c2), the rest in n2"; else fail "gang of 20 spills only as it must: c2 filled first, the rest in n2" "groups: $g"; fi
gang_aon_deleting pg:g3 pg:g8 pg:g20
kubectl delete pods -n "$NS" -l 'tarema.io/gang-e2e in (g3,g8,g20)' --wait=false >/dev/null
wait_for 60 no_pods

# ---- 2. too big: none bound, nothing held ----------------------------------------------------
TASK="1 1 1"
mk big 16 16 8 # 16 x 8 cores: only the 4 n2 and 2 c2 nodes hold 8 cores (8 pods)
# No fixed sleep before the negative: it is checked throughout, until the scheduler has had its
# chance (its PodGroup says why the gang does not fit), and again after its FailedScheduling event.
said_why() { [ "$(pg_field big .status.phase)" = Scheduling ] && grep -q "fit at once" <<<"$(pg_field big '.status.message // ""')"; }
none_until_why() { # none bound at every poll until said_why; 1 when one was bound or 30 s passed
  local deadline=$(($(date +%s) + 30))
  while :; do
    bound_is big 0 || return 1
    said_why && { bound_is big 0; return; }
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
if none_until_why; then pass "a gang larger than the free capacity: none bound, its PodGroup Scheduling and saying why"; else fail "a gang larger than the free capacity: none bound, its PodGroup Scheduling and saying why" "bound $(bound_of big 2>&1); $(pg_field big .status 2>&1)"; fi
failed_ev() { pg_events big | qgrep "^FailedScheduling: .*Insufficient cpu"; }
if wait_for 30 failed_ev; then pass "FailedScheduling event on the PodGroup"; else fail "FailedScheduling event on the PodGroup" "$(pg_events big 2>&1)"; fi
if bound_is big 0; then pass "once all 16 exist and the scheduler reported: still none bound"; else fail "once all 16 exist and the scheduler reported: still none bound" "bound $(bound_of big 2>&1)"; fi
pod_json "$NS" plain "$SCHED" 16 1Gi '{}' "$ID" | jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e": $id}' | kubectl create -f - >/dev/null
if wait_for 30 bash -c "[ -n \"\$(kubectl get pod -n $NS plain -o jsonpath='{.spec.nodeName}')\" ]"; then pass "nothing held: a 16-core pod still fits a c2 node"; else fail "nothing held: a 16-core pod still fits a c2 node"; fi
kubectl delete pod -n "$NS" plain --wait=false >/dev/null 2>&1
gang_aon_deleting pg:big
kubectl delete pods -n "$NS" -l tarema.io/gang-e2e=big --wait=false >/dev/null 2>&1

# ---- 3. two gangs that fit alone, not together -------------------------------------------------
# 4 x 16 cores each: only the two c2 nodes... so 2 pods of 16 per gang; each gang alone fits
# (2 c2 nodes), both together do not.
wait_for 60 no_pods
GANG_POD_PATCH=$(patch) gang_group_json podgroup "$NS" ia 2 >"$WORK/ia.json"
GANG_POD_PATCH=$(patch) gang_group_json podgroup "$NS" ib 2 >>"$WORK/ia.json"
for i in 1 2; do
  GANG_POD_PATCH=$(patch) gang_pods_json podgroup "$NS" ia "$i" "$i" "$SCHED" 16 1Gi
  GANG_POD_PATCH=$(patch) gang_pods_json podgroup "$NS" ib "$i" "$i" "$SCHED" 16 1Gi
done >>"$WORK/ia.json"
kubectl create -f "$WORK/ia.json" >/dev/null
one_done() { { bound_is ia 2 && bound_is ib 0; } || { bound_is ia 0 && bound_is ib 2; }; }
if wait_for 60 one_done; then pass "interleaved gangs: one completes"; else fail "interleaved gangs: one completes" "$(gang_counts "$NS")"; fi
first=ia second=ib
bound_is ia 2 || { first=ib; second=ia; }
# the other waits whole: checked at every poll until the scheduler has tried it and said why
# (a FailedScheduling event on its PodGroup), and through 3 s more, not once after a fixed sleep
tried() { pg_events "$second" | qgrep "^FailedScheduling: "; }
split_ok() { bound_is "$first" 2 && bound_is "$second" 0; }
waits_whole() {
  local deadline=$(($(date +%s) + 30))
  until tried; do
    split_ok || return 1
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
  always_for 3 split_ok
}
if waits_whole; then pass "the other waits whole ($first 2, $second 0, after a FailedScheduling on $second)"; else fail "the other waits whole" "$first $(bound_of "$first" 2>&1), $second $(bound_of "$second" 2>&1); events: $(pg_events "$second" 2>&1 | tail -n 3)"; fi
gang_aon_deleting "pg:$first"
kubectl delete pods -n "$NS" -l "tarema.io/gang-e2e=$first" --wait=false >/dev/null
if wait_bound $second 2 60; then pass "after the first leaves, the second completes (no deadlock)"; else fail "after the first leaves, the second completes (no deadlock)" "$(gang_counts "$NS")"; fi

# ---- 4. timeout ------------------------------------------------------------------------------
GANG_TIMEOUT_S=2 GANG_POD_PATCH=$(patch) gang_create podgroup "$NS" slow 3 3 "$SCHED" 20 1Gi
to() { pg_events slow | qgrep "^Timeout: gang not placed within scheduleTimeoutSeconds 2"; }
if wait_for 30 to; then pass "timeout: Timeout event on the PodGroup"; else fail "timeout: Timeout event on the PodGroup" "$(pg_events slow)"; fi
if bound_is slow 0; then pass "timed-out gang: still none bound"; else fail "timed-out gang: still none bound" "bound $(bound_of slow 2>&1)"; fi
n=$(metric "$PORT" 'tarema_gang_attempts_total{result="timeout"}')
if [ "${n%.*}" -ge 1 ]; then pass "timeouts counted in tarema_gang_attempts_total"; else fail "timeouts counted in tarema_gang_attempts_total" "$n"; fi

# ---- 5. status of a bound gang -----------------------------------------------------------------
gang_aon_deleting "pg:$second"
kubectl delete pods -n "$NS" -l "tarema.io/gang-e2e=$second" --wait=false >/dev/null
TASK="1 1 1"
mk st 4 4 1
wait_bound st 4 60
running() { [ "$(pg_field st .status.phase)" = Running ] && [ "$(pg_field st .status.running)" = 4 ]; }
if wait_for 30 running; then pass "PodGroup status: Running, running 4"; else fail "PodGroup status: Running, running 4" "$(pg_field st .status)"; fi
if pg_events st | qgrep "^Scheduled: gang placed: 4 pod(s) in node group e2"; then pass "Scheduled event on the PodGroup names the node group"; else fail "Scheduled event on the PodGroup names the node group" "$(pg_events st)"; fi

# ---- 6. bad input ----------------------------------------------------------------------------
mk zero 1 0 100m
bad() { [ "$(pg_field zero .status.phase)" = Failed ]; }
if wait_for 30 bad; then pass "minMember 0: phase Failed"; else fail "minMember 0: phase Failed" "$(pg_field zero .status)"; fi
m=$(pg_field zero '.status.message // ""')
if grep -q "spec.minMember must be at least 1, got 0" <<<"$m"; then pass "minMember 0: status message says so"; else fail "minMember 0: status message says so" "$m"; fi
if pg_events zero | qgrep "^Invalid: .*minMember must be at least 1"; then pass "minMember 0: Invalid event"; else fail "minMember 0: Invalid event" "$(pg_events zero)"; fi
mk short 3 5 100m
wt() { grep -q "waiting for 2 more pod(s)" <<<"$(pg_field short '.status.message // ""')"; }
if wait_for 30 wt; then pass "minMember 5 with 3 pods: waits, says 2 more are needed"; else fail "minMember 5 with 3 pods: waits, says 2 more are needed" "$(pg_field short .status)"; fi
GANG_MIN_RESOURCES='{"cpu": "500"}' GANG_POD_PATCH=$(patch) gang_create podgroup "$NS" huge 2 2 "$SCHED" 100m 64Mi
mr() { grep -q "minResources cpu 500000 exceeds the free capacity" <<<"$(pg_field huge '.status.message // ""')"; }
if wait_for 30 mr; then pass "minResources above the free capacity: waits and says so"; else fail "minResources above the free capacity: waits and says so" "$(pg_field huge .status)"; fi
# no sleep: the three waits above are the scheduler's own answers on these gangs
if bound_is zero 0 && bound_is short 0 && bound_is huge 0; then pass "bad input: no pod bound, no capacity held"; else fail "bad input: no pod bound, no capacity held" "$(gang_counts "$NS")"; fi
if kill -0 "$SCHED_PID" 2>/dev/null; then pass "bad input: the scheduler still runs"; else fail "bad input: the scheduler still runs"; fi

# ---- 8. explain ------------------------------------------------------------------------------
out=$("$BIN/tarema-scheduler" explain "$NS/short-1" -o json --scheduler-name "$SCHED" 2>"$WORK/explain.err")
if jq -e '.gang.name == "short" and .gang.minMember == 5 and (.gang.message | test("2 more"))' >/dev/null 2>&1 <<<"$out"; then pass "explain shows the member's gang and why it waits"; else fail "explain shows the member's gang and why it waits" "$(head -c 400 <<<"$out")"; fi

# ---- 7. restart in the middle ------------------------------------------------------------------
gang_aon_deleting '*'
kubectl delete pods -n "$NS" --all --wait=false >/dev/null
wait_for 60 no_pods
# The all-or-nothing monitor stops before the kill below: a kill -9 inside a gang's burst of
# binds leaves that gang partly bound until the restarted scheduler finishes it (longer than
# GANG_AON_GRACE_S: start-up, informer sync, placement), a partial state of the test's own
# doing. This first monitor covers sections 1-6 and 8 (everything the first scheduler placed);
# a second one covers the restarted scheduler (below).
verdict=$(gang_aon_monitor_stop)
rc=$?
# on a violation: the partial samples (did the bound count move?) and the scheduler's own account
# of its gang binds (when it placed each gang, any bind that failed or whose outcome was unknown)
aon_detail() {
  echo "partial samples:"
  gang_aon_partials "$1"
  echo "scheduler log:"
  grep -E 'gang scheduled|gang bind|bind failed|bind outcome|bind not started|bind answered' "$2" | tail -n 12
}
if [ $rc = 0 ]; then pass "all or nothing until the restart ($verdict)"; else fail "all or nothing until the restart" "$verdict
$(aon_detail "$WORK/aon" "$WORK/sched.log")"; fi
for i in 1 2 3 4; do mk "r$i" 6 6 1; done &
# killed as soon as the first member is bound: the other gangs are being placed or bound
any_bound() { local b; b=$(count_lines kubectl get pods -n "$NS" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}') && [ "$b" -ge 1 ]; }
for _ in $(seq 1 300); do any_bound && break; sleep 0.05; done
kill -9 "$SCHED_PID"
wait $! 2>/dev/null # the creating loop
wait "$SCHED_PID" 2>/dev/null
mid=$(for i in 1 2 3 4; do printf 'r%s %s/6; ' "$i" "$(bound_of "r$i")"; done)
# the gangs the kill left partly bound: the second monitor leaves them out (they are checked
# by "every gang ends whole" below); any other gang must stay all or nothing
killed_partial=$(gang_counts "$NS" | gang_partial_from_counts | awk '{printf "%s ", $1}')
if ! start_scheduler "$WORK/sched2.log" --scheduler-name "$SCHED" --qps 2000 --burst 4000; then
  fail "the scheduler starts again" "$(tail -n 5 "$WORK/sched2.log")"
fi
PORT=$SCHED_PORT
gang_aon_monitor_start "$NS" "$WORK/aon2"
all_r() { for i in 1 2 3 4; do bound_is "r$i" 6 || return 1; done; }
if wait_for 90 all_r; then pass "restart in the middle: every gang ends whole (at the kill: $mid)"; else fail "restart in the middle: every gang ends whole" "$(gang_counts "$NS")"; fi
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its allocatable (nothing double-booked)"; else fail "no node over its allocatable (nothing double-booked)" "$out"; fi
dup=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json |
  jq -r '[.items[] | select(.reason == "Scheduled" and .regarding.kind == "Pod") | .regarding.name] | group_by(.) | .[] | select(length > 1) | "\(.[0]) \(length)"' | head -n 3) ||
  dup="unread: listing the events failed"
if [ -z "$dup" ]; then pass "no pod bound twice"; else fail "no pod bound twice" "$dup"; fi

# ---- 9. arrival race ----------------------------------------------------------------------------
# Members created with (or before) their PodGroup, or before the rest of their gang, wait quietly
# for the informer to deliver what is missing: no FailedScheduling event on them for it. Only a
# gang still incomplete after the arrival grace (the "short" gang: minMember 5, 3 pods) reports.
race=$(read_ok kubectl get events.events.k8s.io -n "$NS" -o json |
  jq -r '.items[] | select(.reason == "FailedScheduling" and .regarding.kind == "Pod")
         | select((.note // "") | test("waiting for (PodGroup|Workload) .* to exist|pod\\(s\\) exist, minMember"))
         | select(.regarding.name | test("^short-") | not) | "\(.regarding.name): \(.note)"' | sort -u) ||
  race="unread: listing the events failed"
if [ -z "$race" ]; then pass "arrival race: no FailedScheduling for members that arrived before their PodGroup or gang"; else fail "arrival race: no FailedScheduling for members that arrived before their PodGroup or gang" "$(wc -l <<<"$race") events, e.g. $(head -n 3 <<<"$race")"; fi

verdict=$(GANG_AON_IGNORE=$killed_partial gang_aon_monitor_stop)
rc=$?
if [ $rc = 0 ]; then pass "all or nothing after the restart, but for the gangs the kill left partly bound (${killed_partial:-none}) ($verdict)"; else fail "all or nothing after the restart, but for the gangs the kill left partly bound (${killed_partial:-none})" "$verdict
$(aon_detail "$WORK/aon2" "$WORK/sched2.log")"; fi
if grep -q "PodGroup API .* not served" "$WORK/sched.log"; then fail "the PodGroup informer ran" "$(grep 'not served' "$WORK/sched.log")"; else pass "the PodGroup informer ran"; fi
summary
