# tests/e2e/scheduler_lib.sh: helpers shared by the tarema-scheduler end-to-end tests (sourced
# after tests/e2e/lib.sh). Every test uses its own scheduler name, namespace and node prefix so
# it never touches what other tests run, and cleans up what it created on exit.

# A short id unique to this run, usable in names.
SCHED_E2E_ID=${SCHED_E2E_ID:-$(printf '%05d' $((RANDOM % 100000)))}
SCHED_PIDS=()

# sched_e2e_begin KIND NODE_PREFIX: the start the scheduler e2e tests share. Sets ID, NS
# (KIND-e2e-ID), SCHED (tarema-KIND-ID), P (NODE_PREFIX + ID, the name prefix of the test's own
# nodes) and WORK, and on exit stops the schedulers the test started, deletes its namespace and
# its nodes, runs the test's extra_cleanup when it defines one, and removes WORK. Exits with a
# failure when kubectl is not in PATH. sched_e2e_namespace creates NS (and waits for its
# ServiceAccount, which pods need).
sched_e2e_begin() {
  ID=$SCHED_E2E_ID
  NS=$1-e2e-$ID
  SCHED=tarema-$1-$ID
  P=$2$ID
  WORK=$(mktemp -d)
  trap sched_e2e_cleanup EXIT
  command -v kubectl >/dev/null || { fail "kubectl in PATH" "run under tests/run.sh or eval hack/cluster.sh env"; summary; exit 1; }
}

sched_e2e_cleanup() {
  stop_schedulers
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl get nodes -o name 2>/dev/null | grep "^node/$P" | xargs -r kubectl delete --wait=false >/dev/null 2>&1 || true
  if declare -F extra_cleanup >/dev/null; then extra_cleanup; fi
  rm -rf "$WORK"
}

sched_e2e_namespace() {
  kubectl create namespace "$NS" >/dev/null
  wait_for 30 kubectl get serviceaccount default -n "$NS"
}

# sched_e2e_start [ARGS...]: starts the test's scheduler (--scheduler-name $SCHED, log
# $WORK/sched.log) and passes "tarema-scheduler starts", or fails it and ends the test.
sched_e2e_start() {
  if ! start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED" "$@"; then
    fail "tarema-scheduler starts" "$(tail -n 5 "$WORK/sched.log")"
    summary
    exit 1
  fi
  pass "tarema-scheduler starts"
}

# start_scheduler LOGFILE ARGS...: starts tarema-scheduler in the background with a free port and
# sets SCHED_PORT (the port it serves on) and SCHED_PID. Returns 1 if it does not become ready.
start_scheduler() {
  local log=$1
  shift
  "$BIN/tarema-scheduler" --port 0 "$@" >"$log" 2>&1 &
  SCHED_PID=$!
  SCHED_PIDS+=("$SCHED_PID")
  SCHED_PORT=
  local i
  for i in $(seq 1 100); do
    SCHED_PORT=$(sed -n 's/.*serving addr=[^ ]* port=\([0-9]*\).*/\1/p' "$log" | head -n 1)
    [ -n "$SCHED_PORT" ] && break
    kill -0 "$SCHED_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$SCHED_PORT" ]; then
    echo "tarema-scheduler did not start; log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
  wait_for 30 sched_ready "$SCHED_PORT"
}

# sched_ready PORT: /readyz answers 200, over plain HTTP or (a scheduler with TLS) HTTPS.
sched_ready() {
  curl -sf "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 || curl -sfk "https://127.0.0.1:$1/readyz" >/dev/null 2>&1
}

# stop_schedulers: SIGTERM to every scheduler this test started (by pid), then wait.
# kube_with_extender PORT PROFILE OUTDIR: starts the cluster's kube-scheduler with the
# configuration users are given (manifests/extender/kube-scheduler-config.yaml), only the
# extender's address (127.0.0.1:PORT), the profile's name and the TLS files (the tests' PKI,
# tests/fixtures/tls) changed; hack/cluster.sh sets its own kubeconfig and turns leader election
# off. Writes OUTDIR/ks.yaml and OUTDIR/ks.out. 0 when it runs and is healthy. EXTENDER_HTTP_TIMEOUT
# (e.g. 120s) replaces the configuration's httpTimeout: a test that pauses kube-scheduler longer
# than that would otherwise see a call in flight time out on resumption, and kube-scheduler places
# the pod without its (ignorable) extender. EXTENDER_BIND=1 adds bindVerb: bind (the extender
# binds; start it with --extender-bind).
kube_with_extender() {
  local tls=$REPO_ROOT/tests/fixtures/tls
  python3 - "$REPO_ROOT/manifests/extender/kube-scheduler-config.yaml" "$1" "$2" "$tls" "${EXTENDER_HTTP_TIMEOUT:-}" "${EXTENDER_BIND:-}" >"$3/ks.yaml" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
cfg["profiles"][0]["schedulerName"] = sys.argv[3]
ext = cfg["extenders"][0]
ext["urlPrefix"] = "https://127.0.0.1:" + sys.argv[2]
ext["tlsConfig"] = {"certFile": sys.argv[4] + "/client.crt", "keyFile": sys.argv[4] + "/client.key",
                    "caFile": sys.argv[4] + "/ca.crt"}
if sys.argv[5]:
    ext["httpTimeout"] = sys.argv[5]
if sys.argv[6] == "1":
    ext["bindVerb"] = "bind"
print(yaml.safe_dump(cfg, sort_keys=False))
PY
  bash "$REPO_ROOT/hack/cluster.sh" scheduler start "$3/ks.yaml" >"$3/ks.out" 2>&1 && return 0
  # hack/cluster.sh sometimes reports a start failure for a scheduler that is up and healthy
  wait_for 10 kube_scheduler_healthy
}
# extender_setup PROFILE [ARGS...]: tarema-scheduler --mode extender for PROFILE's pods over
# HTTPS with the tests' PKI (log $WORK/ext.log, more flags in ARGS), then the cluster's
# kube-scheduler calling it (kube_with_extender); each passes its check, or the test fails and
# ends there. Sets STARTED_KS=1 (the caller's cleanup stops kube-scheduler) and SCHED_PORT.
extender_setup() {
  local profile=$1 tls=$REPO_ROOT/tests/fixtures/tls
  shift
  if ! start_scheduler "$WORK/ext.log" --mode extender --scheduler-name "$profile" --log-level debug \
    --tls-cert-file "$tls/server.crt" --tls-key-file "$tls/server.key" --client-ca-file "$tls/ca.crt" "$@"; then
    fail "tarema-scheduler --mode extender starts" "$(tail -n 5 "$WORK/ext.log")"
    summary
    exit 1
  fi
  pass "tarema-scheduler --mode extender starts"
  if ! kube_with_extender "$SCHED_PORT" "$profile" "$WORK"; then
    fail "kube-scheduler starts with tarema as extender" "$(tail -n 5 "$WORK/ks.out")"
    summary
    exit 1
  fi
  STARTED_KS=1
  pass "kube-scheduler starts with tarema as extender"
}
kube_scheduler_healthy() { bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep -E '^ +scheduler +running .*healthy'; }

stop_schedulers() {
  local p
  for p in "${SCHED_PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${SCHED_PIDS[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  SCHED_PIDS=()
}

# metric PORT NAME_WITH_LABELS: the value of one series of /metrics (0 when the scheduler serves
# its metrics without that series). When the scrape itself fails (the scheduler is gone or does
# not answer) it prints nothing and returns 1: a dead scheduler never reads as "0 in flight".
metric() {
  local m
  m=$(read_ok curl -sf --max-time 5 "http://127.0.0.1:$1/metrics") || return 1
  awk -v m="$2" '$1 == m {print $2; found=1} END {if (!found) print 0}' <<<"$m"
}
# metric_sum PORT ERE: the sum of the series whose name with labels matches ERE, as a whole
# number, all from one scrape (several `metric` calls could see a pod move between two series
# and count it in none or twice). Nothing and status 1 when the scrape fails.
metric_sum() {
  local m
  m=$(read_ok curl -sf --max-time 5 "http://127.0.0.1:$1/metrics") || return 1
  awk -v re="$2" '$1 ~ re {s += $2} END {printf "%d", s}' <<<"$m"
}

# pod_json NS NAME SCHEDULER CPU MEMORY [ANNOTATIONS_JSON] [TOLERATE_ID]: one Pod as JSON.
pod_json() {
  local ann=${6:-}
  [ -n "$ann" ] || ann='{}'
  jq -cn --arg ns "$1" --arg name "$2" --arg sched "$3" --arg cpu "$4" --arg mem "$5" \
    --argjson ann "$ann" --arg tol "${7:-}" '
    {apiVersion: "v1", kind: "Pod",
     metadata: {namespace: $ns, name: $name, annotations: $ann},
     spec: {schedulerName: $sched,
            containers: [{name: "c", image: "busybox",
                          resources: {requests: {cpu: $cpu, memory: $mem}}}]}}
    | if $tol != "" then .spec.tolerations = [{key: "tarema.io/e2e", operator: "Equal",
                                               value: $tol, effect: "NoSchedule"}] else . end'
}

# pods_json NS PREFIX N SCHED CPU MEM [ANNOTATIONS_JSON] [TOLERATE_ID]: pods PREFIX-1..PREFIX-N,
# each exactly what pod_json gives for that name, in one jq run: a jq process per pod costs
# some 50 ms on the loaded 2-core machine, close to a minute for the 1,000 pods of a test.
pods_json() {
  pod_json "$1" "$2-0" "$4" "$5" "$6" "${7:-}" "${8:-}" |
    jq -c --arg p "$2" --argjson n "$3" '. as $t | range(1; $n + 1) | . as $i | $t | .metadata.name = "\($p)-\($i)"'
}

# Node of a pod ("" while unbound).
pod_node() {
  kubectl get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}' 2>/dev/null
}

# Number of pods of namespace NS bound to a node; nothing and status 1 when the list fails.
bound_count() {
  read_jq '[.items[] | select(.spec.nodeName != null and .spec.nodeName != "")] | length' kubectl get pods -n "$1" -o json
}

# The invariant every scheduler must keep: on every node the requests of all its non-finished
# pods (any scheduler's) fit its allocatable cpu, memory and pod count. Prints the offenders;
# fails when the check itself could not run.
check_fit() {
  local dir rc
  dir=$(mktemp -d)
  kubectl get pods -A -o json >"$dir/pods.json" && kubectl get nodes -o json >"$dir/nodes.json" || { rm -rf "$dir"; echo "cannot list pods and nodes"; return 1; }
  jq -rn --slurpfile pods "$dir/pods.json" --slurpfile nodes "$dir/nodes.json" '
    def qty: tostring | capture("^(?<n>[0-9.]+)(?<u>[a-zA-Z]*)$") as $c | ($c.n | tonumber) *
      ({"": 1, "m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 1024, "Mi": 1048576,
        "Gi": 1073741824, "Ti": 1099511627776}[$c.u]);
    def req($r): [.spec.containers[] | .resources.requests[$r] // "0" | qty] | add;
    ($pods[0].items | map(select(.spec.nodeName != null and .spec.nodeName != "" and
                                 (.status.phase | IN("Succeeded", "Failed") | not)))
     | group_by(.spec.nodeName)
     | map({key: .[0].spec.nodeName,
            value: {cpu: (map(req("cpu")) | add), memory: (map(req("memory")) | add),
                    pods: length}}) | from_entries) as $used |
    $nodes[0].items[] | .metadata.name as $n | select($used[$n]) |
    .status.allocatable as $a | $used[$n] as $u |
    select(($u.cpu > ($a.cpu | qty) + 1e-9) or ($u.memory > ($a.memory | qty)) or
           ($u.pods > ($a.pods | qty))) |
    "\($n): requested cpu \($u.cpu) memory \($u.memory) pods \($u.pods) > allocatable \($a)"'
  rc=$?
  rm -rf "$dir"
  return $rc
}

# events_per_pod NS REASON: "name count" lines of events.k8s.io events with that reason; nothing
# and status 1 when the events cannot be listed.
events_per_pod() {
  local ev
  ev=$(read_ok kubectl get events.events.k8s.io -n "$1" -o json) || return 1
  jq -r --arg r "$2" '[.items[] | select(.reason == $r) | .regarding.name] | group_by(.) | .[] | "\(.[0]) \(length)"' <<<"$ev"
}

# priority_classes NAME VALUE [NAME VALUE ...]: creates each PriorityClass (cluster-scoped: the
# test's extra_cleanup deletes them). Fails at the first that cannot be created.
priority_classes() {
  while [ $# -ge 2 ]; do
    kubectl create -f - >/dev/null <<EOF || return 1
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $1}
value: $2
EOF
    shift 2
  done
}

# ---- the real kube-scheduler beside tarema (the reference of the comparing tests) ----
# kube_scheduler_up: starts the cluster's kube-scheduler unless it runs (KS_STARTED=1 then, so
# the test's cleanup stops only what it started; log $WORK/ks.log) and checks "kube-scheduler
# runs".
kube_scheduler_up() {
  if ! bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep "scheduler  *running"; then
    bash "$REPO_ROOT/hack/cluster.sh" scheduler start >"$WORK/ks.log" 2>&1 && KS_STARTED=1
  fi
  check "kube-scheduler runs" bash -c "bash '$REPO_ROOT/hack/cluster.sh' status | grep -q 'scheduler  *running'"
}
# failed_event POD ERE: POD's scheduler reported it unschedulable (a FailedScheduling event in
# NS) for a reason matching ERE.
failed_event() {
  kubectl get events.events.k8s.io -n "$NS" -o json |
    jq -e --arg p "$1" --arg re "$2" '[.items[] | select(.reason == "FailedScheduling" and .regarding.name == $p and (.note | test($re)))] | length > 0' >/dev/null
}
# notes POD: the last three events of POD in NS, "reason: note" (for failure messages).
notes() {
  kubectl get events.events.k8s.io -n "$NS" -o json |
    jq -r --arg p "$1" '.items[] | select(.regarding.name == $p) | "\(.reason): \(.note)"' | tail -n 3
}

# ks_running: whether the local cluster's kube-scheduler runs. ks_start_if_stopped: starts it
# when it does not (log $WORK/ks.log) and sets KS_STARTED=1 then, so that the test's cleanup
# stops only what it started (a test run alone gets the cluster without it).
ks_running() { bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep "scheduler  *running"; }
ks_start_if_stopped() {
  if ! ks_running; then
    bash "$REPO_ROOT/hack/cluster.sh" scheduler start >"$WORK/ks.log" 2>&1 && KS_STARTED=1
  fi
  check "kube-scheduler runs" ks_running
}
