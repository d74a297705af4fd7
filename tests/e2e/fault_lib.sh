# tests/e2e/fault_lib.sh: the figures every scheduler fault test prints (sourced after lib.sh and
# scheduler_lib.sh): of namespace NS with N pods of CPU each,
#   F_BOUND       pods bound
#   F_OVER_NODES  nodes whose pods (any scheduler's) exceed allocatable cpu or pod count
#   F_OVER_PODS   the fewest pods of size CPU whose removal makes every node fit
#   F_DOUBLE      pods with more than one Scheduled event
#   F_LOST        pods neither bound nor queued by any of the schedulers (PORTS...): negative when
#                 pods were counted twice (bound and queued), which fault_checks fails too
# A figure whose read failed (the API server or a scheduler's /metrics did not answer) is
# "unread: WHY", never 0, so the checks on it fail.

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }

# fault_figures NS N CPU PORT...: sets the F_* variables.
fault_figures() {
  local ns=$1 n=$2 cpu=$3 dir over q v p
  shift 3
  dir=$(mktemp -d)
  F_BOUND="unread: listing pods failed" F_OVER_NODES="unread: listing pods or nodes failed" F_OVER_PODS=?
  F_DOUBLE="unread: listing events failed" F_QUEUED="unread" F_LOST="unread: pods or queues unread"
  if ! read_ok kubectl get pods -A -o json >"$dir/pods.json" || ! read_ok kubectl get nodes -o json >"$dir/nodes.json"; then
    rm -rf "$dir"
    return 1
  fi
  F_BOUND=$(jq --arg ns "$ns" '[.items[] | select(.metadata.namespace == $ns and (.spec.nodeName // "") != "")] | length' "$dir/pods.json")
  over=$(jq -rn --slurpfile pods "$dir/pods.json" --slurpfile nodes "$dir/nodes.json" --arg cpu "$cpu" '
    def qty: tostring | capture("^(?<n>[0-9.]+)(?<u>[a-zA-Z]*)$") as $c | ($c.n | tonumber) *
      ({"": 1, "m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 1048576, "Gi": 1073741824}[$c.u]);
    def req($r): [.spec.containers[] | .resources.requests[$r] // "0" | qty] | add;
    ($cpu | qty) as $pc |
    ($pods[0].items | map(select((.spec.nodeName // "") != "" and (.status.phase | IN("Succeeded", "Failed") | not)))
     | group_by(.spec.nodeName) | map({key: .[0].spec.nodeName, value: {cpu: (map(req("cpu")) | add), pods: length}}) | from_entries) as $used |
    [$nodes[0].items[] | .metadata.name as $n | select($used[$n]) | .status.allocatable as $a |
     ([((($used[$n].cpu - ($a.cpu | qty)) / $pc) - 1e-9 | ceil), ($used[$n].pods - ($a.pods | qty)), 0] | max)] |
    "\(map(select(. > 0)) | length) \(add // 0)"')
  [ -n "$over" ] && read -r F_OVER_NODES F_OVER_PODS <<<"$over"
  local ev
  ev=$(events_per_pod "$ns" Scheduled) && F_DOUBLE=$(awk '$2 > 1' <<<"$ev" | grep -c . || true)
  # the four queues from one scrape per scheduler (metric_sum): a pod moving between queues
  # (backoff -> active, active -> inflight) is counted once
  local queued=0
  for p in "$@"; do
    v=$(metric_sum "$p" '^tarema_pending_pods[{]queue="(active|backoff|unschedulable|inflight)"[}]$') ||
      { F_QUEUED="unread: /metrics of port $p did not answer"; rm -rf "$dir"; return 1; }
    queued=$((queued + v))
  done
  F_QUEUED=$queued
  # not clamped: a negative count means pods counted both bound and queued, a failure too
  F_LOST=$((n - F_BOUND - queued))
  rm -rf "$dir"
}

# fault_checks NAME: the pass/fail lines on the F_* variables.
fault_checks() {
  [ "$F_OVER_NODES" = 0 ] && pass "$1: no node over its allocatable" || fail "$1: no node over its allocatable" "$F_OVER_NODES nodes, $F_OVER_PODS pods over: $(check_fit | head -n 5)"
  [ "$F_DOUBLE" = 0 ] && pass "$1: no pod bound twice (Scheduled events)" || fail "$1: no pod bound twice" "$F_DOUBLE pods with more than one Scheduled event"
  [ "$F_LOST" = 0 ] && pass "$1: no pod lost (every unbound pod is still queued: $F_QUEUED)" || fail "$1: no pod lost" "$F_LOST pods neither bound nor queued (bound $F_BOUND, queued $F_QUEUED; negative: counted twice)"
}

# fault_armed NAME INFLIGHT ANSWERED N: the fault hit work in progress, or the test proves
# nothing (if every pod was bound already, every invariant holds trivially): binds were in
# flight at the fault, and fewer than N binds had been answered.
fault_armed() {
  [ "${2%.*}" -gt 0 ] 2>/dev/null && pass "$1: binds in flight at the fault ($2)" ||
    fail "$1: binds in flight at the fault" "in flight '${2}': the fault hit an idle scheduler; raise FAULT_PODS"
  [ "${3%.*}" -lt "$4" ] 2>/dev/null && pass "$1: pods left to bind at the fault ($3 of $4 binds answered)" ||
    fail "$1: pods left to bind at the fault" "answered '${3}' of $4: all bound before the fault; raise FAULT_PODS"
}

# wait_inflight PORT MIN SECONDS: waits until PORT has at least MIN binds in flight (or SECONDS
# pass); sets INFLIGHT to the last reading ("" when the scrape failed).
wait_inflight() {
  local deadline
  deadline=$(($(date +%s) + $3))
  while :; do
    INFLIGHT=$(metric "$1" tarema_binds_in_flight)
    [ "${INFLIGHT%.*}" -ge "$2" ] 2>/dev/null && return 0
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.05
  done
}

# first_bind_after PORT TIMEOUT_S [OK0]: waits until tarema_binds_total{result="ok"} of PORT grows
# beyond OK0 (default: its value now); prints the time it did (empty on timeout).
first_bind_after() {
  local ok0=${3:-} ok i
  [ -n "$ok0" ] || ok0=$(metric "$1" 'tarema_binds_total{result="ok"}')
  for i in $(seq 1 $(($2 * 10))); do
    ok=$(metric "$1" 'tarema_binds_total{result="ok"}')
    [ "${ok%.*}" -gt "${ok0%.*}" ] && { now; return 0; }
    sleep 0.1
  done
}

# fault_recovery NS N PORT T0 SINCE [OK0]: after a fault that ended at T0, measures REC (seconds to
# the next bind on PORT; OK0: its tarema_binds_total{result="ok"} before the fault, read then
# rather than now, when a replica that took over may have bound all it had to already) and REC_ALL (seconds until all N pods of NS are bound; "none" on
# timeout), reports the latter ("... after SINCE"), then waits until no bind is in flight.
fault_recovery() {
  local ns=$1 n=$2 port=$3 t0=$4 since=$5 ok0=${6:-} t_bind
  t_bind=$(first_bind_after "$port" 30 "$ok0")
  if [ -n "$t_bind" ]; then
    REC=$(secs "$t0" "$t_bind")
  else
    REC=none
    fail "a bind within 30 s after $since" "tarema_binds_total{result=\"ok\"} of port $port did not grow (scrape: $(metric "$port" 'tarema_binds_total{result="ok"}' 2>&1))"
  fi
  all_bound() { [ "$(bound_count "$ns")" -ge "$n" ]; }
  if wait_for 60 all_bound; then
    REC_ALL=$(secs "$t0" "$(now)")
    pass "all $n pods bound ${REC_ALL} s after $since (first bind after ${REC} s)"
  else
    REC_ALL=none
    fail "all pods bound after $since" "$(bound_count "$ns") of $n"
  fi
  settled() { [ "$(metric "$port" tarema_binds_in_flight)" = 0 ]; }
  wait_for 30 settled || fail "no bind in flight after $since" "in flight: $(metric "$port" tarema_binds_in_flight 2>&1)"
}
