#!/usr/bin/env bash
# tests/e2e/scheduler_backfill_test.sh: time-aware backfill in the live scheduler (issue 32,
# docs/backfill.md), the starvation case on the test's own kwok nodes (2 of 8 cores, tainted and
# labelled for this test only): a continuous stream of 1-core pods of known short runtime
# (kwok ends each after tarema.io/duration, 6-10 s; tarema.io/expected-duration says the same),
# topped up so that a few always wait, then one 8-core pod (a whole node).
#  1. backfill.reserveDepth 0 (today's first fit): the wide pod stays pending as long as the
#     stream lasts (measured and printed): every core that frees goes to a narrow pod;
#  2. reserveDepth 1 (EASY): the wide pod's tarema.io/expected-start appears within a few
#     cycles, it binds within a cycle or two of that time while the stream goes on, narrow pods
#     are backfilled meanwhile, FailedScheduling of a narrow pod names whom the node is held for,
#     and /metrics shows shadows, backfilled pods, planning time and the estimate error;
#  3. the same for a gang (PodGroup, minMember 4) of 4 pods of 4 cores under reserveDepth 1; its
#     PodGroup carries the expected start too (tarema.io/expected-start: status has no field
#     for it), at the running pods' last end (the gang needs all 16 cores), removed once the
#     gang is bound;
#  4. under reserveDepth all (conservative), a gang of 4 pods of 1 core, every narrow pod queued
#     behind it with its own shadow: it binds within a cycle or two of its announced start (the
#     narrow pods' shadows, planned around it, never hold its members back).
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/backfill_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

# How long the stream lasts under depth 0 (the wide pod must stay pending throughout).
STARVE_S=${BACKFILL_STARVE_S:-20}
# How far past its announced start the wide pod may bind: the plan's resolution (1 s), kwok's
# lag in ending a pod (the status write after its duration), the watch, one backoff (1 s).
LATE_S=${BACKFILL_LATE_S:-6}

sched_e2e_begin bf bf
SET=bf$ID
STREAM_PID=
extra_cleanup() {
  [ -n "$STREAM_PID" ] && kill "$STREAM_PID" 2>/dev/null
  # BACKFILL_LOG_DIR: keep the schedulers' logs (debug level) for a look after the run
  [ -n "${BACKFILL_LOG_DIR:-}" ] && mkdir -p "$BACKFILL_LOG_DIR" && cp "$WORK"/*.log "$BACKFILL_LOG_DIR"/
  true
}
LOGLEVEL=()
[ -n "${BACKFILL_LOG_DIR:-}" ] && LOGLEVEL=(--log-level debug)
check "PodGroup CRD installed" install_reservation_crds
sched_e2e_namespace
bf_nodes 2
pod() { bf_pod "$@"; }

# stream SCHED PREFIX: keeps 5 narrow pods waiting (the nodes drain about 2 a second: 16 cores,
# 8 s mean), runtimes 6..10 s so that the ends are spread, until killed. A small backlog: enough
# that every core that frees has a narrow pod waiting for it, few enough that a wide pod created
# behind it soon heads the queue.
stream() {
  local i=0 n c k
  while :; do
    n=$(kubectl get pods -n "$NS" --field-selector=status.phase=Pending -o json 2>/dev/null |
      jq --arg p "$2-" '[.items[] | select((.metadata.name | startswith($p)) and .spec.nodeName == null)] | length') || n=5
    c=$((5 - ${n:-5}))
    if [ "$c" -gt 0 ]; then
      for ((k = 0; k < c; k++)); do pod "$1" "$2-$((i + k))" 1 "$((6 + (i + k) % 5))s"; done |
        kubectl create -f - >/dev/null 2>&1
      i=$((i + c))
    fi
    [ "$c" -gt 0 ] || sleep 0.2 # the generator's pace, not a wait for a condition
  done
}
stop_stream() { [ -n "$STREAM_PID" ] && kill "$STREAM_PID" 2>/dev/null; wait "$STREAM_PID" 2>/dev/null; STREAM_PID=; }

# Narrow pods of PREFIX bound (count).
bound_of() { read_jq "[.items[] | select(.metadata.name | startswith(\"$1-\")) | select(.spec.nodeName != null)] | length" kubectl get pods -n "$NS" -o json; }
# full PREFIX: all 16 cores taken by narrow pods and a backlog waiting.
full() {
  local j
  j=$(read_ok kubectl get pods -n "$NS" -o json) || return 1
  jq -e --arg p "$1-" '[.items[] | select(.metadata.name | startswith($p))] |
    ([.[] | select(.spec.nodeName != null and .status.phase != "Succeeded")] | length) >= 16 and
    ([.[] | select(.spec.nodeName == null)] | length) >= 1' <<<"$j" >/dev/null
}
# stream_state PREFIX: "R running, W waiting" of the narrow pods, for the failure messages.
stream_state() {
  kubectl get pods -n "$NS" -o json 2>/dev/null | jq -r --arg p "$1-" '[.items[] | select(.metadata.name | startswith($p))] |
    "\([.[] | select(.spec.nodeName != null and .status.phase != "Succeeded")] | length) running, \([.[] | select(.spec.nodeName == null)] | length) waiting"'
}
# drained PREFIX: no pod of PREFIX runs any more (kwok ends them within 10 s); those still
# pending stay so, their scheduler stopped, and hold nothing.
drained() {
  local j
  j=$(read_ok kubectl get pods -n "$NS" -o json) || return 1
  jq -e --arg p "$1-" '[.items[] | select((.metadata.name | startswith($p)) and .spec.nodeName != null and .status.phase != "Succeeded")] | length == 0' <<<"$j" >/dev/null
}

# gang_create NAME SCHED CORES DURATION: a PodGroup NAME (minMember 4) and its pods NAME-0..3.
gang_create() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: $1, namespace: $NS}
spec: {minMember: 4}
EOF
  local m
  for m in 0 1 2 3; do pod "$2" "$1-$m" "$3" "$4" "{\"scheduling.x-k8s.io/pod-group\":\"$1\"}"; done |
    kubectl create -f - >/dev/null
}
# gang_announced LABEL NAME T: waits for the expected start on NAME-0 (created at T) into GANN.
gang_announced() {
  if wait_for 10 has_expected_start "$2-0"; then
    GANN=$(expected_start "$2-0")
    pass "$1: expected-start announced on its pods after $(($(date +%s) - $3)) s ($GANN)"
  else
    fail "$1: expected-start announced on its pods" "none after 10 s"
    GANN=
  fi
}
gang_bound() { local m; for m in 0 1 2 3; do is_bound "$NS" "$1-$m" || return 1; done; }
# gang_on_time LABEL NAME T: all of NAME's pods bind, within LATE_S of GANN; 1 when they do not.
gang_on_time() {
  if ! wait_for 60 gang_bound "$2"; then
    fail "$1: all 4 members bind while the stream goes on" "$(kubectl get pods -n "$NS" -l scheduling.x-k8s.io/pod-group="$2" -o wide); last expected start $(expected_start "$2-0")"
    return 1
  fi
  local tb a
  tb=$(date +%s)
  a=$(date -u -d "$GANN" +%s 2>/dev/null || echo 0)
  echo "    $1: announced for $GANN, all 4 bound $((tb - a)) s after, $((tb - $3)) s after creation"
  if [ "$a" -gt 0 ] && [ "$((tb - a))" -le "$LATE_S" ]; then pass "$1: bound within ${LATE_S} s of its announced start"; else
    fail "$1: bound within ${LATE_S} s of its announced start" "$((tb - a)) s; its last expected start $(expected_start "$2-0")"
  fi
}

config() {
  cat >"$WORK/$1.yaml" <<EOF
schedulerName: $SCHED-$1
qps: 200
burst: 400
podInitialBackoffMs: 500
podMaxBackoffMs: 1000
backfill: {reserveDepth: $2, resolution: 1s, maxJobTest: 100}
EOF
}

# start_depth NAME DEPTH PREFIX LABEL: a scheduler NAME with reserveDepth DEPTH (its port in
# SCHED_PORT), then the stream PREFIX, until it fills the 16 cores with a backlog waiting.
start_depth() {
  config "$1" "$2"
  if start_scheduler "$WORK/$1.log" --config "$WORK/$1.yaml" "${LOGLEVEL[@]}"; then pass "scheduler with reserveDepth $2 starts"; else
    fail "scheduler with reserveDepth $2 starts" "$(tail -n 5 "$WORK/$1.log")"; summary; exit 1
  fi
  stream "$SCHED-$1" "$3" &
  STREAM_PID=$!
  if wait_for 60 full "$3"; then pass "$4: the stream fills the 16 cores with a backlog waiting"; else fail "$4: the stream fills the 16 cores with a backlog waiting" "$(stream_state "$3")"; fi
}

# ---- 1. depth 0: the wide pod starves --------------------------------------------------------------
start_depth d0 0 n0 "depth 0"
PORT0=$SCHED_PORT
pod "$SCHED-d0" wide0 8 5s | kubectl create -f - >/dev/null
T0=$(date +%s)
before=$(bound_of n0)
if always_for "$STARVE_S" not_bound "$NS" wide0; then
  pass "depth 0: the 8-core pod stays pending for the ${STARVE_S} s the stream lasts"
else
  fail "depth 0: the 8-core pod stays pending for the ${STARVE_S} s the stream lasts" "bound after $(($(date +%s) - T0)) s on $(pod_node "$NS" wide0)"
fi
after=$(bound_of n0)
echo "    depth 0: 8-core pod pending $(($(date +%s) - T0)) s while $((after - before)) narrow pods were bound in front of it"
if [ "$((after - before))" -ge "$STARVE_S" ]; then pass "depth 0: narrow pods kept binding meanwhile"; else fail "depth 0: narrow pods kept binding meanwhile" "$((after - before)) in ${STARVE_S} s"; fi
if [ -z "$(expected_start wide0)" ] && [ "$(metric "$PORT0" tarema_backfill_shadows)" = 0 ]; then
  pass "depth 0: no expected-start annotation, no backfill metrics (today's behaviour)"
else
  fail "depth 0: no expected-start annotation, no backfill metrics (today's behaviour)" "annotation '$(expected_start wide0)'"
fi
stop_stream
stop_schedulers
check "depth 0's narrow pods ended" wait_for 30 drained n0

# ---- 2. depth 1: the wide pod gets a shadow ---------------------------------------------------------
start_depth d1 1 n1 "depth 1"
PORT1=$SCHED_PORT
pod "$SCHED-d1" wide1 8 5s | kubectl create -f - >/dev/null
T1=$(date +%s)
if wait_for 10 has_expected_start wide1; then
  ANN=$(expected_start wide1)
  pass "depth 1: tarema.io/expected-start announced after $(($(date +%s) - T1)) s ($ANN)"
else
  fail "depth 1: tarema.io/expected-start announced" "none after 10 s; $(grep -c backfill "$WORK/d1.log") backfill log lines"
  ANN=
fi
before=$(bound_of n1)
if wait_for 60 is_bound "$NS" wide1; then
  TB=$(date +%s)
  LAST=$(expected_start wide1)
  A=$(date -u -d "$ANN" +%s 2>/dev/null || echo 0)
  L=$(date -u -d "$LAST" +%s 2>/dev/null || echo 0)
  echo "    depth 1: 8-core pod announced for $ANN (last $LAST), bound at $(date -u -d "@$TB" +%H:%M:%SZ): $((TB - A)) s after the first announcement, $((TB - L)) s after the last, $((TB - T1)) s after it was created"
  if [ "$A" -gt 0 ] && [ "$((TB - A))" -le "$LATE_S" ]; then
    pass "depth 1: bound within ${LATE_S} s of its announced start"
  else
    fail "depth 1: bound within ${LATE_S} s of its announced start" "announced $ANN, bound $((TB - A)) s after"
  fi
else
  fail "depth 1: the 8-core pod binds while the stream goes on" "still pending after 60 s; annotation $(expected_start wide1)"
fi
after=$(bound_of n1)
if [ "$((after - before))" -gt 0 ]; then pass "depth 1: narrow pods were backfilled before it started ($((after - before)))"; else fail "depth 1: narrow pods were backfilled before it started" "none"; fi
if wait_for 10 bash -c "[ \$(kubectl get pods -n $NS -o json | jq '[.items[] | select(.metadata.name | startswith(\"n1-\")) | select(.spec.nodeName != null)] | length') -gt $after ]"; then
  pass "depth 1: the stream goes on after the wide pod started"
else
  fail "depth 1: the stream goes on after the wide pod started" "no narrow pod bound in 10 s"
fi
HELD=$(kubectl get events.events.k8s.io -n "$NS" -o json | jq -r --arg w "pod $NS/wide1" '[.items[] | select(.reason == "FailedScheduling") | .note | select(contains("held for " + $w + " from "))] | first // ""')
if [ -n "$HELD" ]; then pass "FailedScheduling names whom the node is held for and from when"; else
  fail "FailedScheduling names whom the node is held for and from when" "$(kubectl get events.events.k8s.io -n "$NS" -o json | jq -r '[.items[] | select(.reason == "FailedScheduling") | .note] | unique | .[:3][]')"
fi
echo "    e.g. $HELD"
M=$(curl -sf "http://127.0.0.1:$PORT1/metrics")
bfp=$(awk '$1 == "tarema_backfill_pods_total" {print $2}' <<<"$M")
pc=$(awk '$1 == "tarema_backfill_plan_duration_seconds_count" {print $2}' <<<"$M")
psum=$(awk '$1 == "tarema_backfill_plan_duration_seconds_sum" {print $2}' <<<"$M")
echo "    metrics: tarema_backfill_pods_total=$bfp plans=$pc planning s total=$psum"
if [ "${bfp:-0}" -gt 0 ] 2>/dev/null && awk -v c="${pc:-0}" 'BEGIN {exit !(c > 0)}'; then
  pass "/metrics: pods backfilled and planning time per cycle"
else
  fail "/metrics: pods backfilled and planning time per cycle" "$(grep tarema_backfill <<<"$M")"
fi
# The estimate error: every pod this scheduler announced and then saw bound (the wide pod at
# least; narrow pods at the head of the queue may have been announced too), |bound - announced|.
ec=$(awk '$1 ~ /^tarema_backfill_start_error_seconds_count/ {s += $2} END {print s + 0}' <<<"$M")
es=$(awk '$1 ~ /^tarema_backfill_start_error_seconds_sum/ {s += $2} END {print s + 0}' <<<"$M")
late=$(awk '$1 == "tarema_backfill_start_error_seconds_count{direction=\"late\"}" {print $2}' <<<"$M")
echo "    estimate error: $ec announced pods bound, mean $(awk -v s="$es" -v c="$ec" 'BEGIN {printf "%.1f", c ? s / c : 0}') s, ${late:-0} late"
if [ "$ec" -ge 1 ] 2>/dev/null; then
  pass "/metrics: the estimate error of announced starts ($ec pods, the wide one among them)"
else
  fail "/metrics: the estimate error of announced starts" "$(grep tarema_backfill_start_error <<<"$M")"
fi

# ---- 3. depth 1: a gang of 4 pods of 4 cores ----------------------------------------------------------
if wait_for 30 full n1; then pass "gang: the stream still fills the cores"; else fail "gang: the stream still fills the cores" "$(stream_state n1)"; fi
gang_create gang "$SCHED-d1" 4 5s
T2=$(date +%s)
gang_announced gang gang "$T2"
# The PodGroup's annotation: the time the gang needs all 16 cores, so no running pod may end
# after it (E = the latest expected end, startTime + expected duration, of the pods running when
# it is read), and it is no later than that end (or now, when a pod overran it) plus the
# resolution and whole-second rounding.
pg_start() { kubectl get podgroups.scheduling.x-k8s.io -n "$NS" gang -o jsonpath='{.metadata.annotations.tarema\.io/expected-start}' 2>/dev/null; }
has_pg_start() { [ -n "$(pg_start)" ]; }
if wait_for 5 has_pg_start; then
  PGA=$(pg_start)
  NOW=$(date +%s)
  E=$(kubectl get pods -n "$NS" -o json | jq '[.items[] | select(.spec.nodeName != null and .status.phase != "Succeeded" and .status.startTime != null)
        | (.status.startTime | fromdate) + (.metadata.annotations["tarema.io/expected-duration"] | rtrimstr("s") | tonumber)] | max // 0')
  A=$(date -u -d "$PGA" +%s 2>/dev/null || echo 0)
  HI=$((E > NOW ? E : NOW))
  echo "    gang: PodGroup tarema.io/expected-start $PGA (pods: $(expected_start gang-0)); the running pods' last expected end $(date -u -d "@$E" +%H:%M:%SZ)"
  pass "gang: the PodGroup shows the expected start ($PGA)"
  if [ "$A" -ge "$((E - 1))" ] && [ "$A" -le "$((HI + 2))" ]; then
    pass "gang: the PodGroup's expected start is the running pods' last end"
  else
    fail "gang: the PodGroup's expected start is the running pods' last end" "$PGA against the last end $(date -u -d "@$E" +%H:%M:%SZ), read at $(date -u -d "@$NOW" +%H:%M:%SZ)"
  fi
else
  fail "gang: the PodGroup shows the expected start" "none 5 s after its pods had one: $(kubectl get podgroups.scheduling.x-k8s.io -n "$NS" gang -o json | jq -c .metadata.annotations)"
fi
if gang_on_time gang gang "$T2"; then
  no_pg_start() { [ -z "$(pg_start)" ]; }
  if wait_for 5 no_pg_start; then pass "gang: the PodGroup's expected start is removed once the gang is bound"; else
    fail "gang: the PodGroup's expected start is removed once the gang is bound" "still $(pg_start)"
  fi
fi
stop_stream
stop_schedulers
check "depth 1's narrow pods ended" wait_for 30 drained n1

# ---- 4. depth all (conservative): a gang of 4 pods of 1 core, every narrow pod with a shadow ------
# The shadows of the narrow pods queued behind the gang are planned around it, on its nodes
# beside it and from its end; they must not hold its own members back (a job is held back only
# by the shadows ahead of it, and what it takes within its own shadow is not counted twice).
# Before that rule the gang fitted, its expected start "now" every second, and a member was
# refused as long as narrow pods waited behind it (on the ASA comparison's cluster: 36 s).
start_depth dall all n2 "depth all"
PORTALL=$SCHED_PORT
gang_create gang2 "$SCHED-dall" 1 20s
T3=$(date +%s)
gang_announced "depth all: gang" gang2 "$T3"
# the case itself: shadows of jobs behind the gang exist while it waits
many_shadows() { [ "$(metric "$PORTALL" tarema_backfill_shadows)" -gt 1 ] 2>/dev/null; }
if wait_for 5 many_shadows; then pass "depth all: more than one shadow held while the gang waits ($(metric "$PORTALL" tarema_backfill_shadows))"; else
  fail "depth all: more than one shadow held while the gang waits" "tarema_backfill_shadows $(metric "$PORTALL" tarema_backfill_shadows)"
fi
gang_on_time "depth all: gang" gang2 "$T3"
stop_stream
check "no node over its allocatable" check_fit
summary
