#!/usr/bin/env bash
# hack/cluster.sh: a real, local Kubernetes control plane for tarema's tests and demo: etcd,
# kube-apiserver (TLS, Node+RBAC, ServiceAccount tokens), kube-controller-manager and kwok,
# which keeps every Node Ready and plays the pods bound to them (hack/kwok/stages.yaml).
# No kubelets, no containers: nodes are API objects with the capacity a node file gives them.
# What a kubelet would do beyond that: pod-deleter (hack/kwok/pod_deleter.py) completes pod
# deletions with the pod's UID as precondition; a kwok Stage copies extended resources from a
# node's capacity to its allocatable, as a kubelet's device manager does.
#
#   up [--nodes FILE] [--workload-api]
#                           build the tools (cached), start everything, create the nodes, wait.
#                           --workload-api: the native Workload API of the instance's Kubernetes
#                           version on the API server (1.35: scheduling.k8s.io/v1alpha1 Workload,
#                           pods' spec.workloadRef; 1.36: v1alpha2 Workload + PodGroup, pods'
#                           spec.schedulingGroup; 1.37: the same at v1beta1), and kube-scheduler
#                           (scheduler start) with its GangScheduling plugin; kept for the
#                           instance's life (an `up` without it does not drop it)
#   down                    stop every process of the instance and delete its state
#   status                  each component, the API, nodes Ready; exit 0 when healthy
#   env                     export lines for eval: KUBECONFIG, TAREMA_CLUSTER_DIR, ...
#   nodes FILE              create the nodes of FILE (those missing) and wait until Ready
#   kill COMPONENT          SIGKILL one component (etcd, apiserver, controller-manager, kwok,
#                           pod-deleter, scheduler); start COMPONENT starts it again with the
#                           same flags
#   scheduler start [CONFIG] | scheduler stop
#                           the real kube-scheduler against this instance
#   provisioner start | provisioner stop
#                           the dynamic provisioner tarema.local/hostpath (hack/hostpath-
#                           provisioner: sig-storage-lib-external-provisioner's controller, a
#                           directory under the state dir per volume, the PV pinned to the node
#                           the scheduler selected); started only by the tests that need it
#
# Instances: TAREMA_CLUSTER_NAME (default tarema) selects one; each has its own state dir
# $TAREMA_CACHE/clusters/NAME (pki/, *.kubeconfig, run/*.pid, logs/, etcd/) and its own free
# loopback ports (ports.env), so several run side by side. Admin client certificate:
# $TAREMA_CLUSTER_DIR/pki/admin.{crt,key}, CA: pki/ca.crt (for curl).
#
# Kubernetes version: TAREMA_K8S_VERSION (default in hack/versions.env) at `up`; the instance
# records it (version.env) and every later command runs that version's binaries, so
# `kill`/`start`/`scheduler start` never mix versions. Asking for another version on a running
# instance is refused: `down` it first.
#
# Node file: nodes: [{prefix, count, cpu, memory, pods, ephemeral-storage, labels, taints}],
# node names <prefix>-<i> from 1. Default: $TAREMA_NODES or tests/fixtures/nodes/paper-5442.yaml.
#
# TAREMA_NODE_LEASE_S: the node Lease duration kwok renews (default 40, a kubelet's; renewed
# every quarter of it), and kube-controller-manager's --node-monitor-grace-period with it, at the
# instance's first `up` (recorded). Only for clusters of thousands of nodes on a small machine:
# 5,000 nodes renew 500 Leases a second at 40 s, more than two cores' API server keeps up with
# beside a benchmark, and nodes then flap NotReady (docs/preemption.md, "5,000 nodes").
#
# TAREMA_KS_V: kube-scheduler's log verbosity at `scheduler start` (default 0; 4 logs each
# attempt and its filters, for comparing a decision with tarema's), log in logs/scheduler.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# An unexpected failure names the line instead of ending the script silently.
trap 'echo "error: hack/cluster.sh: command failed at line $LINENO: $BASH_COMMAND" >&2' ERR

NAME=${TAREMA_CLUSTER_NAME:-tarema}
[[ $NAME =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] ||
  die "TAREMA_CLUSTER_NAME '$NAME' is not usable: use 1-40 lower-case letters, digits or '-'"
CLUSTERS=$TAREMA_CACHE/clusters
DIR=$CLUSTERS/$NAME
PKI=$DIR/pki
RUN=$DIR/run
LOGS=$DIR/logs
STAGES=$HACK_DIR/kwok/stages.yaml
DEFAULT_NODES=${TAREMA_NODES:-$REPO_ROOT/tests/fixtures/nodes/paper-5442.yaml}
# The control plane in start order; the scheduler is separate (scheduler start|stop).
CORE=(etcd apiserver controller-manager kwok pod-deleter)
START_TIMEOUT=${TAREMA_START_TIMEOUT:-120}
# Instance options that change components' flags, recorded so that `start` after `kill` and a
# later `up` run every component with the same ones: WORKLOAD_API=1 (up --workload-api).
FEATURES=$DIR/features.env
# The Kubernetes version the instance runs (KUBERNETES_VERSION=...), written at its first `up`.
VERSION_FILE=$DIR/version.env
if [ -f "$VERSION_FILE" ]; then
  inst_version=$(sed -n 's/^KUBERNETES_VERSION=//p' "$VERSION_FILE")
  if [ -n "${TAREMA_K8S_VERSION:-}" ] && [ "$TAREMA_K8S_VERSION" != "$inst_version" ]; then
    die "cluster '$NAME' runs Kubernetes $inst_version, not TAREMA_K8S_VERSION=$TAREMA_K8S_VERSION: run 'TAREMA_CLUSTER_NAME=$NAME hack/cluster.sh down' first, or pick another TAREMA_CLUSTER_NAME"
  fi
  if [ -n "$inst_version" ] && [ "$inst_version" != "$KUBERNETES_VERSION" ]; then
    TAREMA_K8S_VERSION=$inst_version
    . "$HACK_DIR/lib.sh"
  fi
fi
# The native Workload API per Kubernetes minor version (see docs/gangs.md, "Kubernetes
# versions", for how each was read off the API server):
# - 1.35 (alpha, off by default): GenericWorkload serves scheduling.k8s.io/v1alpha1 Workload and
#   keeps pods' spec.workloadRef (the API server drops the field without it); GangScheduling
#   turns on kube-scheduler's plugin of that name (PreEnqueue until minCount pods exist, Permit
#   waits until minCount are placed). The scheduler needs GenericWorkload too, for its informers.
# - 1.36 (alpha): v1alpha2 Workload (templates) and PodGroup (the runtime object), pods'
#   spec.schedulingGroup; the same two gates.
# - 1.37 (beta, still off by default): v1beta1; the GangScheduling gate is gone, kube-scheduler
#   enables its GangScheduling plugin whenever GenericWorkload is on. Beta APIs are not served
#   by default (since 1.24), hence the runtime-config. kube-controller-manager gets the gate too
#   (its garbage collector and Job controller watch the new objects).
# - From 1.36 WorkloadWithJob (alpha) too, on the API server (it keeps a Job's spec.scheduling)
#   and kube-controller-manager (the Job controller then creates the Job's Workload and PodGroup
#   and points its pods at the group): tests/e2e/gang_job_test.sh.
case $KUBERNETES_MINOR in
  35)
    WORKLOAD_GATES=GenericWorkload=true
    WORKLOAD_SCHEDULER_GATES=GenericWorkload=true,GangScheduling=true
    WORKLOAD_RUNTIME_CONFIG=scheduling.k8s.io/v1alpha1=true
    ;;
  36)
    WORKLOAD_GATES=GenericWorkload=true,WorkloadWithJob=true
    WORKLOAD_SCHEDULER_GATES=GenericWorkload=true,GangScheduling=true
    WORKLOAD_RUNTIME_CONFIG=scheduling.k8s.io/v1alpha2=true
    ;;
  *)
    WORKLOAD_GATES=GenericWorkload=true,WorkloadWithJob=true
    WORKLOAD_SCHEDULER_GATES=GenericWorkload=true
    WORKLOAD_RUNTIME_CONFIG=scheduling.k8s.io/v1beta1=true
    ;;
esac
# The group version whose discovery must list workloads before `up` returns.
WORKLOAD_API_VERSION=${WORKLOAD_RUNTIME_CONFIG%=true}

# ---------------------------------------------------------------------------------- helpers

need_cmds() {
  local missing=() c
  for c in openssl curl jq ss flock setsid python3; do command -v "$c" >/dev/null || missing+=("$c"); done
  python3 -c 'import yaml' 2>/dev/null || missing+=("python3-yaml")
  if [ ${#missing[@]} -gt 0 ]; then
    step "missing ${missing[*]}: running hack/install-deps.sh"
    bash "$HACK_DIR/install-deps.sh"
    for c in "${missing[@]}"; do
      [ "$c" = python3-yaml ] && { python3 -c 'import yaml' 2>/dev/null || die "python3 cannot import yaml: install the Debian package python3-yaml"; continue; }
      command -v "$c" >/dev/null || die "$c is still missing after hack/install-deps.sh: install it (Debian package providing $c)"
    done
  fi
}

# The binaries this script runs, at the versions pinned in versions.env (same marker files as
# build-controlplane.sh; layout in lib.sh), so a warm `up` needs no Go toolchain at all.
tools_ready() {
  local t v d
  for t in kube-apiserver:$KUBERNETES_VERSION kube-controller-manager:$KUBERNETES_VERSION \
    kube-scheduler:$KUBERNETES_VERSION kubectl:$KUBERNETES_VERSION etcd:$ETCD_VERSION kwok:$KWOK_VERSION; do
    v=${t#*:}
    t=${t%%:*}
    case $t in kube* | kubectl) d=$K8S_BIN ;; *) d=$TOOLS_BIN ;; esac
    [ -x "$d/$t" ] && [ "$(cat "$d/.$t.version" 2>/dev/null)" = "$v" ] || return 1
  done
}

binary_of() {
  case $1 in
    etcd) echo "$TOOLS_BIN/etcd" ;;
    apiserver) echo "$K8S_BIN/kube-apiserver" ;;
    controller-manager) echo "$K8S_BIN/kube-controller-manager" ;;
    scheduler) echo "$K8S_BIN/kube-scheduler" ;;
    kwok) echo "$TOOLS_BIN/kwok" ;;
    pod-deleter) command -v python3 ;;
    provisioner) echo "$TOOLS_BIN/hostpath-provisioner" ;;
  esac
}

# Accepts the short names and the binaries' names.
component_name() {
  case $1 in
    etcd) echo etcd ;;
    apiserver | kube-apiserver) echo apiserver ;;
    controller-manager | kube-controller-manager | kcm) echo controller-manager ;;
    scheduler | kube-scheduler) echo scheduler ;;
    kwok) echo kwok ;;
    pod-deleter) echo pod-deleter ;;
    provisioner | hostpath-provisioner) echo provisioner ;;
    *) die "unknown component '$1': use etcd, apiserver, controller-manager, kwok, pod-deleter, scheduler or provisioner" ;;
  esac
}

require_instance() {
  [ -f "$DIR/ports.env" ] || { drop_lock; die "no cluster instance '$NAME' (no $DIR/ports.env): run 'TAREMA_CLUSTER_NAME=$NAME hack/cluster.sh up' first"; }
  # shellcheck source=/dev/null
  . "$DIR/ports.env"
}

# A free TCP port on 127.0.0.1 that no other tarema instance (cluster or PostgreSQL) has
# recorded. Callers hold the ports lock. Ports below the kernel's ephemeral range, so outgoing
# connections cannot take them between picking and binding.
pick_port() {
  local taken=$1 p i
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    grep -qx "$p" <<<"$taken" && continue
    ss -Htln "sport = :$p" 2>/dev/null | grep -q . && continue
    echo "$p"
    return 0
  done
  die "no free port found on 127.0.0.1 in 20000-31999"
}

alloc_ports() {
  mkdir -p "$TAREMA_CACHE"
  local lock=$TAREMA_CACHE/.ports.lock taken var p
  exec 9>"$lock"
  flock -w 30 9 || die "could not lock $lock to pick ports"
  taken=$(cat "$CLUSTERS"/*/ports.env "$TAREMA_CACHE"/postgres/*/ports.env 2>/dev/null |
    sed -n 's/^[A-Z_]*=\([0-9][0-9]*\)$/\1/p' || true)
  : >"$DIR/ports.env.tmp"
  for var in ETCD_PORT ETCD_PEER_PORT APISERVER_PORT CONTROLLER_MANAGER_PORT SCHEDULER_PORT KWOK_PORT; do
    p=$(pick_port "$taken")
    taken+=$'\n'"$p"
    echo "$var=$p" >>"$DIR/ports.env.tmp"
  done
  mv "$DIR/ports.env.tmp" "$DIR/ports.env"
  flock -u 9
  exec 9>&-
}

api_url() { echo "https://127.0.0.1:$APISERVER_PORT"; }

# api METHOD PATH [curl args...]: one request with the admin certificate; prints the body,
# fails on an HTTP error.
api() {
  local method=$1 path=$2
  shift 2
  curl -sS --fail-with-body --max-time 20 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
    --key "$PKI/admin.key" -X "$method" "$(api_url)$path" "$@"
}

# ------------------------------------------------------------------------------- processes

pid_of() { [ -f "$RUN/$1.pid" ] && cat "$RUN/$1.pid" || true; }

# Running means: the recorded pid is alive, not a zombie, and its command line names this
# instance's state dir (so a recycled pid is never taken for ours).
# is_alive NAME: its recorded process exists and is not a zombie.
is_alive() {
  local pid state
  pid=$(pid_of "$1")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
  [ "$state" != Z ]
}

# is_running NAME: alive and really ours (its command line names this instance's files), so a
# stale pid file whose pid was reused does not count.
is_running() {
  is_alive "$1" || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$(pid_of "$1")/cmdline" | grep -qF -- "$DIR/"
}

# args_of NAME: the flags of a component, one per line; the same every time, so `start` after
# `kill` restarts it exactly as `up` did.
args_of() {
  a() { printf '%s\n' "$@"; }
  case $1 in
    etcd)
      a --name="$NAME" --data-dir="$DIR/etcd"
      a --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT"
      a --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT"
      a --initial-cluster="$NAME=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new
      # Test data only: skipping fsync makes etcd (and so every write) much faster.
      a --unsafe-no-fsync=true --quota-backend-bytes=8589934592 --log-level=warn
      ;;
    apiserver)
      a --etcd-servers="http://127.0.0.1:$ETCD_PORT" --etcd-prefix=/registry
      a --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT"
      a --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key"
      a --client-ca-file="$PKI/ca.crt" --cert-dir="$PKI/apiserver-generated"
      a --authorization-mode=Node,RBAC --allow-privileged=true
      a --admission-control-config-file="$DIR/admission.yaml"
      a --service-account-issuer=https://kubernetes.default.svc.cluster.local
      a --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key"
      a --service-cluster-ip-range=10.96.0.0/16
      # A loopback address cannot be an Endpoints address; nothing here needs the
      # in-cluster "kubernetes" service endpoints.
      a --endpoint-reconciler-type=none
      a --profiling=false --event-ttl=1h --v=0
      if workload_api; then
        a --feature-gates="$WORKLOAD_GATES" --runtime-config="$WORKLOAD_RUNTIME_CONFIG"
      fi
      ;;
    controller-manager)
      a --kubeconfig="$DIR/controller-manager.kubeconfig"
      a --authentication-kubeconfig="$DIR/controller-manager.kubeconfig"
      a --authorization-kubeconfig="$DIR/controller-manager.kubeconfig"
      a --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" --cert-dir="$PKI/controller-manager-generated"
      a --leader-elect=false --use-service-account-credentials=true --cluster-name="$NAME"
      a --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt"
      a --kube-api-qps=1000 --kube-api-burst=2000
      # Controllers that need volumes, a cloud, CSRs or metrics do nothing useful without
      # kubelets; leaving them out saves start time and log noise. The PV binder stays: it
      # completes the binding of claims (pv.kubernetes.io/bind-completed, status.phase Bound),
      # which schedulers wait for, as on a real cluster; so does the ephemeral volume controller
      # (it creates the claim <pod>-<volume> of a pod's generic ephemeral volume).
      local off=(persistentvolume-attach-detach-controller
        persistentvolume-expander-controller persistentvolume-protection-controller
        persistentvolumeclaim-protection-controller
        volumeattributesclass-protection-controller cloud-node-lifecycle-controller
        node-route-controller service-lb-controller node-ipam-controller
        certificatesigningrequest-approving-controller certificatesigningrequest-signing-controller
        certificatesigningrequest-cleaner-controller horizontal-pod-autoscaler-controller
        kube-apiserver-serving-clustertrustbundle-publisher-controller
        podcertificaterequest-cleaner-controller)
      # Only names this version knows: an unknown one stops kube-controller-manager (1.37 moved
      # the cloud controllers out; its --help lists "All controllers: ...").
      local known c kept=()
      known=$("$K8S_BIN/kube-controller-manager" --help 2>/dev/null | sed -n 's/.*All controllers: //p' | tr -d ' ' | tr ',' '\n')
      for c in "${off[@]}"; do
        if [ -z "$known" ] || grep -qx -- "$c" <<<"$known"; then kept+=("$c"); fi
      done
      a "--controllers=*$(printf ',-%s' "${kept[@]}")" --v=0
      # a longer node Lease (TAREMA_NODE_LEASE_S) is a longer grace, as a kubelet's 40 s is 40 s
      if [ "$(node_lease_s)" != 40 ]; then a --node-monitor-grace-period="$(node_lease_s)s"; fi
      # From 1.36 its controllers (garbage collector, Job) know the Workload and PodGroup.
      if workload_api && [ "$KUBERNETES_MINOR" -ge 36 ]; then a --feature-gates="$WORKLOAD_GATES"; fi
      ;;
    kwok)
      a --kubeconfig="$DIR/kwok.kubeconfig" --manage-all-nodes=true --config="$STAGES"
      a --server-address="127.0.0.1:$KWOK_PORT" --node-lease-duration-seconds="$(node_lease_s)"
      # Room for 65k pod IPs (the default /24 runs out at 254 running pods).
      a --cidr=10.0.0.1/16 --node-ip=10.255.0.1
      ;;
    pod-deleter)
      a "$HACK_DIR/kwok/pod_deleter.py" --state="$DIR/" --server="$(api_url)"
      ;;
    provisioner)
      a -kubeconfig="$DIR/admin.kubeconfig" -root="$DIR/volumes" -name=tarema.local/hostpath
      ;;
    scheduler)
      a --config="$DIR/scheduler-config.yaml"
      a --authentication-kubeconfig="$DIR/scheduler.kubeconfig" --authorization-kubeconfig="$DIR/scheduler.kubeconfig"
      a --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --cert-dir="$PKI/scheduler-generated" --v="${TAREMA_KS_V:-0}"
      if workload_api; then a --feature-gates="$WORKLOAD_SCHEDULER_GATES"; fi
      ;;
  esac
}

# workload_api: the instance was brought up with --workload-api.
workload_api() { grep -qx 'WORKLOAD_API=1' "$FEATURES" 2>/dev/null; }
# node_lease_s: the node Lease duration recorded at the first `up` (TAREMA_NODE_LEASE_S), else 40.
node_lease_s() { sed -n 's/^NODE_LEASE_S=//p' "$FEATURES" 2>/dev/null | tail -n 1 | grep . || echo 40; }

# started_with NAME FLAG: the running process of NAME has FLAG on its command line, so `up
# --workload-api` on an instance already up without it restarts the API server with it.
started_with() { is_running "$1" && tr '\0' '\n' <"/proc/$(pid_of "$1")/cmdline" | grep -qxF -- "$2"; }

healthy() {
  case $1 in
    etcd) curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"' ;;
    apiserver) api GET /readyz >/dev/null 2>&1 ;;
    controller-manager) curl -sfk --max-time 2 "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz" >/dev/null ;;
    scheduler) curl -sfk --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz" >/dev/null ;;
    kwok) curl -sf --max-time 2 "http://127.0.0.1:$KWOK_PORT/healthz" >/dev/null ;;
    # Written after its first list of pods.
    pod-deleter) [ -f "$RUN/pod-deleter.ready" ] ;;
    # no health endpoint: its controller says when it has started (the log of this start)
    provisioner) sed -n '/^--- .* start: /h; /^--- .* start: /!H; ${x;p}' "$LOGS/provisioner.log" 2>/dev/null | grep -q 'Started provisioner controller' ;;
  esac
}

# start_component NAME: starts it (if not running) in its own session, detached from this
# shell's stdio, and waits until its health endpoint answers.
start_component() {
  local c=$1 bin args
  bin=$(binary_of "$c")
  [ -x "$bin" ] || die "$bin not found: run hack/build-controlplane.sh"
  if is_running "$c"; then
    wait_healthy "$c"
    return
  fi
  mkdir -p "$RUN" "$LOGS"
  # kwok manages a node only while it holds the node's Lease, and a new kwok process has a new
  # identity: it would leave every node (and its pods) alone until the dead process's leases
  # expire, 40 s later. No kwok of this instance runs now, so those leases are stale.
  if [ "$c" = kwok ] && healthy apiserver; then
    api DELETE /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases >/dev/null 2>&1 || true
  fi
  [ "$c" = pod-deleter ] && rm -f "$RUN/pod-deleter.ready"
  mapfile -t args < <(args_of "$c")
  echo "--- $(date -u +%FT%TZ) start: $bin ${args[*]}" >>"$LOGS/$c.log"
  # The lock descriptors stay with this script: a daemon holding them would block every
  # later command on this instance.
  setsid "$bin" "${args[@]}" </dev/null >>"$LOGS/$c.log" 2>&1 8>&- 9>&- &
  echo $! >"$RUN/$c.pid"
  wait_healthy "$c"
}

wait_healthy() {
  local c=$1 deadline=$((SECONDS + START_TIMEOUT))
  until healthy "$c"; do
    # is_alive, not is_running: the pid is the one just started, and until the child has
    # exec'd the binary its command line is still this script's (is_running would say "gone").
    if ! is_alive "$c"; then
      tail -n 20 "$LOGS/$c.log" >&2 || true
      die "$c exited while starting (log: $LOGS/$c.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 20 "$LOGS/$c.log" >&2 || true
      die "$c not healthy after ${START_TIMEOUT}s (log: $LOGS/$c.log)"
    fi
    sleep 0.2
  done
}

# stop_component NAME SIGNAL: signals the recorded pid and waits until it is gone; a process
# that ignores SIGTERM for 15 s gets SIGKILL.
stop_component() {
  local c=$1 sig=${2:-TERM} pid i
  if ! is_running "$c"; then
    rm -f "$RUN/$c.pid"
    return 0
  fi
  pid=$(pid_of "$c")
  kill -s "$sig" "$pid" 2>/dev/null || true
  for i in $(seq 1 150); do
    is_running "$c" || break
    [ "$i" = 75 ] && kill -s KILL "$pid" 2>/dev/null
    sleep 0.1
  done
  is_running "$c" && die "$c (pid $pid) did not exit"
  rm -f "$RUN/$c.pid"
}

# -------------------------------------------------------------------------- certificates

# cert NAME CN [O] [SAN]: a P-256 key and a certificate signed by the instance CA.
cert() {
  local name=$1 cn=$2 org=${3:-} san=${4:-} subj ext
  subj="/CN=$cn"
  [ -n "$org" ] && subj="/O=$org$subj"
  ext=$PKI/$name.ext
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then
      echo "extendedKeyUsage=serverAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subj" \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$ext"
}

# kubeconfig NAME CERT: a kubeconfig with the CA and the client certificate embedded, so it
# stays valid when copied elsewhere.
kubeconfig() {
  local file=$DIR/$1.kubeconfig c=$2
  local ca crt key
  ca=$(base64 -w0 <"$PKI/ca.crt")
  crt=$(base64 -w0 <"$PKI/$c.crt")
  key=$(base64 -w0 <"$PKI/$c.key")
  cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $NAME
  cluster:
    server: $(api_url)
    certificate-authority-data: $ca
users:
- name: $c
  user:
    client-certificate-data: $crt
    client-key-data: $key
contexts:
- name: $NAME
  context:
    cluster: $NAME
    user: $c
current-context: $NAME
EOF
  chmod 600 "$file.tmp"
  mv "$file.tmp" "$file"
}

make_pki() {
  [ -f "$PKI/.done" ] && return 0
  step "generating CA, certificates and service-account key in $PKI"
  rm -rf "$PKI"
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=tarema-$NAME-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin tarema-admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  # kwok plays every kubelet at once (all nodes, all their pods, leases), which no single
  # node identity may do: it gets cluster-admin through system:masters.
  cert kwok kwok-controller system:masters
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  touch "$PKI/.done"
}

# make_webhook_credential: what the API server presents to admission webhooks, from its
# admission configuration (--admission-control-config-file): a client certificate of the
# instance CA, for every webhook (kubeconfig user "*"). A webhook that requires it
# (tarema-labeler webhook --authenticate-mutate, docs/sizing.md) trusts the instance CA.
make_webhook_credential() {
  [ -f "$PKI/webhook-client.crt" ] || cert webhook-client tarema-apiserver-webhook-client
  [ -f "$DIR/admission.yaml" ] && return 0
  cat >"$DIR/webhook-client.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate-data: $(base64 -w0 <"$PKI/webhook-client.crt")
    client-key-data: $(base64 -w0 <"$PKI/webhook-client.key")
EOF
  chmod 600 "$DIR/webhook-client.kubeconfig"
  cat >"$DIR/admission.yaml.tmp" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $DIR/webhook-client.kubeconfig
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $DIR/webhook-client.kubeconfig
EOF
  mv "$DIR/admission.yaml.tmp" "$DIR/admission.yaml"
}

make_kubeconfigs() {
  kubeconfig admin admin
  kubeconfig controller-manager controller-manager
  kubeconfig scheduler scheduler
  kubeconfig kwok kwok
}

# -------------------------------------------------------------------------------- nodes

yaml_to_json() {
  python3 -c 'import json, sys, yaml
try:
    json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout, default=str)
except (OSError, yaml.YAMLError) as e:
    sys.exit("%s" % e)' "$1"
}

# node_objects FILE: validates the node file and prints one Node object (JSON) per line.
# Errors name the entry and the field.
node_objects() {
  local file=$1 json
  [ -f "$file" ] || die "node file $file not found"
  json=$(yaml_to_json "$file" 2>&1) || die "node file $file is not valid YAML: $json"
  jq -c -r --arg file "$file" '
    def qty: type == "number" and . > 0 or (type == "string" and test("^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"));
    def dns: type == "string" and test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$") and length <= 50;
    def labelkey: type == "string" and test("^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$");
    def labelval: type == "string" and test("^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$");
    def err($i; $e; $msg): "error: \($file): nodes[\($i)]\(if ($e|type) == "object" and ($e.prefix|type) == "string" then " (prefix \($e.prefix))" else "" end): \($msg)";
    def str: if type == "string" then . else tostring end;
    if type != "object" or (.nodes | type) != "array" or (.nodes | length) == 0 then
      "error: \($file): expected a top-level key `nodes` with a non-empty list of node groups"
    else
      .nodes | to_entries[] | .key as $i | .value as $e |
      if ($e | type) != "object" then err($i; $e; "expected a mapping with prefix, count, cpu, memory")
      elif ([$e | keys[] | select(IN("prefix","count","cpu","memory","pods","ephemeral-storage","labels","taints") | not)] | length) > 0 then
        err($i; $e; "unknown key(s) \([$e | keys[] | select(IN("prefix","count","cpu","memory","pods","ephemeral-storage","labels","taints") | not)] | join(", ")) (allowed: prefix, count, cpu, memory, pods, ephemeral-storage, labels, taints)")
      elif ($e.prefix | dns | not) then err($i; $e; "prefix must be a lower-case DNS label (a-z, 0-9, -), got \($e.prefix | tojson)")
      elif ($e.count | type) != "number" or $e.count < 1 or ($e.count | floor) != $e.count then err($i; $e; "count must be a positive integer, got \($e.count | tojson)")
      elif ($e.cpu | qty | not) then err($i; $e; "cpu must be a positive number of cores or a quantity like 500m, got \($e.cpu | tojson)")
      elif ($e.memory | qty | not) then err($i; $e; "memory must be a quantity like 16Gi (or a number of bytes), got \($e.memory | tojson)")
      elif $e.pods != null and (($e.pods | type) != "number" or $e.pods < 1 or ($e.pods | floor) != $e.pods) then err($i; $e; "pods must be a positive integer, got \($e.pods | tojson)")
      elif $e["ephemeral-storage"] != null and ($e["ephemeral-storage"] | type) != "string" or ($e["ephemeral-storage"] != null and ($e["ephemeral-storage"] | qty | not)) then err($i; $e; "ephemeral-storage must be a quantity like 100Gi, got \($e["ephemeral-storage"] | tojson)")
      elif $e.labels != null and (($e.labels | type) != "object" or ([$e.labels | to_entries[] | select((.key | labelkey | not) or (.value | str | labelval | not))] | length) > 0) then
        err($i; $e; "labels must map label keys to label values (letters, digits, -_. up to 63 chars), bad: \(if ($e.labels|type) == "object" then [$e.labels | to_entries[] | select((.key | labelkey | not) or (.value | str | labelval | not)) | .key] | join(", ") else $e.labels | tojson end)")
      elif $e.taints != null and (($e.taints | type) != "array" or ([$e.taints[] | select(type != "object" or (.key | labelkey | not) or ((.value // "") | str | labelval | not) or (.effect | IN("NoSchedule","PreferNoSchedule","NoExecute") | not))] | length) > 0) then
        err($i; $e; "taints must be a list of {key, value, effect} with effect NoSchedule, PreferNoSchedule or NoExecute, got \($e.taints | tojson)")
      else
        ({cpu: ($e.cpu | str), memory: ($e.memory | str), pods: (($e.pods // 110) | str),
          "ephemeral-storage": ($e["ephemeral-storage"] // "100Gi")}) as $res |
        range(1; $e.count + 1) | "\($e.prefix)-\(.)" as $n |
        {apiVersion: "v1", kind: "Node",
         metadata: {name: $n,
           labels: ((($e.labels // {}) | map_values(str)) + {"kubernetes.io/hostname": $n,
             "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", type: "kwok"}),
           annotations: {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
         spec: (if $e.taints then {taints: [$e.taints[] | {key, effect} + (if .value != null then {value: (.value | str)} else {} end)]} else {} end),
         status: {capacity: $res, allocatable: $res}} | tojson
      end
    end' <<<"$json" >"$DIR/nodes.tmp" || die "node file $file could not be read"
  if grep -q '^error: ' "$DIR/nodes.tmp"; then
    grep -m1 '^error: ' "$DIR/nodes.tmp" >&2
    rm -f "$DIR/nodes.tmp"
    exit 1
  fi
  local dup
  dup=$(jq -r '.metadata.name' "$DIR/nodes.tmp" | sort | uniq -d | head -n 3 | paste -sd, -)
  [ -z "$dup" ] || die "node file $file: node name(s) $dup would appear twice (two entries share a prefix)"
  cat "$DIR/nodes.tmp"
  rm -f "$DIR/nodes.tmp"
}

# create_nodes FILE: creates the nodes of FILE that do not exist yet (one curl process for
# all of them, reusing the connection) and waits until they are all Ready.
create_nodes() {
  local file=$1 objs names existing todo=0 cfg
  objs=$(node_objects "$file") || exit 1
  names=$(jq -r '.metadata.name' <<<"$objs")
  existing=$(api GET /api/v1/nodes | jq -r '.items[].metadata.name')
  mkdir -p "$DIR/nodes"
  cfg=$DIR/nodes/create.curl
  : >"$cfg"
  local n obj
  while IFS=$'\t' read -r n obj; do
    grep -qx -- "$n" <<<"$existing" && continue
    printf '%s' "$obj" >"$DIR/nodes/$n.json"
    [ $todo -gt 0 ] && echo next >>"$cfg"
    cat >>"$cfg" <<EOF
url = "$(api_url)/api/v1/nodes"
request = "POST"
header = "Content-Type: application/json"
data-binary = "@$DIR/nodes/$n.json"
cacert = "$PKI/ca.crt"
cert = "$PKI/admin.crt"
key = "$PKI/admin.key"
output = "$DIR/nodes/$n.out"
write-out = "%{http_code} $n\n"
EOF
    todo=$((todo + 1))
  done < <(jq -r '"\(.metadata.name)\t\(tojson)"' <<<"$objs")
  local total
  total=$(wc -l <<<"$names")
  if [ $todo -gt 0 ]; then
    step "creating $todo of $total nodes from $file"
    local results bad
    results=$(curl -sS -K "$cfg") || die "creating nodes failed: $results"
    bad=$(awk '$1 != "201" && $1 != "409"' <<<"$results" | head -n 1)
    if [ -n "$bad" ]; then
      local n=${bad#* }
      die "creating node $n failed (HTTP ${bad%% *}): $(cat "$DIR/nodes/$n.out" 2>/dev/null | jq -r '.message // .' 2>/dev/null)"
    fi
  fi
  rm -rf "$DIR/nodes"
  wait_nodes_ready "$names"
}

# Ready = kwok reported Ready and the node lifecycle controller lifted the not-ready taint, so
# a scheduler may use the node at once.
ready_count() {
  api GET /api/v1/nodes | jq -r --arg names "$1" '
    ($names | split("\n") | map(select(length > 0))) as $want |
    [.items[] | select(.metadata.name as $n | $want | index($n)) |
     select(any(.status.conditions[]?; .type == "Ready" and .status == "True")) |
     select(all(.spec.taints[]?; .key != "node.kubernetes.io/not-ready"))] | length'
}

wait_nodes_ready() {
  local names=$1 total ready last=-1 deadline=$((SECONDS + START_TIMEOUT))
  total=$(grep -c . <<<"$names")
  while :; do
    ready=$(ready_count "$names" 2>/dev/null || echo 0)
    if [ "$ready" != "$last" ]; then
      step "nodes Ready $ready/$total"
      last=$ready
    fi
    [ "$ready" -ge "$total" ] && return 0
    [ $SECONDS -ge $deadline ] && die "only $ready of $total nodes Ready after ${START_TIMEOUT}s (kwok log: $LOGS/kwok.log)"
    sleep 0.3
  done
}

# ------------------------------------------------------------------------------ commands

cmd_up() {
  local nodes=$DEFAULT_NODES want_workload=0
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) [ $# -ge 2 ] || die "--nodes needs a file"; nodes=$2; shift 2 ;;
      --nodes=*) nodes=${1#--nodes=}; shift ;;
      --workload-api) want_workload=1; shift ;;
      *) die "up: unknown argument '$1' (usage: hack/cluster.sh up [--nodes FILE] [--workload-api])" ;;
    esac
  done
  [ -f "$nodes" ] || die "node file $nodes not found"
  local t0=$SECONDS
  need_cmds
  tools_ready || bash "$HACK_DIR/build-controlplane.sh"
  mkdir -p "$DIR" "$RUN" "$LOGS"
  [ -f "$VERSION_FILE" ] || echo "KUBERNETES_VERSION=$KUBERNETES_VERSION" >"$VERSION_FILE"
  if [ -f "$DIR/ports.env" ]; then
    # shellcheck source=/dev/null
    . "$DIR/ports.env"
  else
    alloc_ports
    # shellcheck source=/dev/null
    . "$DIR/ports.env"
  fi
  make_pki
  make_webhook_credential
  [ -f "$DIR/admin.kubeconfig" ] || make_kubeconfigs
  if [ -n "${TAREMA_NODE_LEASE_S:-}" ] && ! grep -q '^NODE_LEASE_S=' "$FEATURES" 2>/dev/null; then
    [[ $TAREMA_NODE_LEASE_S =~ ^[1-9][0-9]*$ ]] && [ "$TAREMA_NODE_LEASE_S" -ge 10 ] ||
      die "TAREMA_NODE_LEASE_S must be a whole number of seconds, at least 10, not '$TAREMA_NODE_LEASE_S'"
    echo "NODE_LEASE_S=$TAREMA_NODE_LEASE_S" >>"$FEATURES"
    step "node Leases of ${TAREMA_NODE_LEASE_S}s (kwok), node monitor grace period the same (controller-manager)"
  fi
  if [ $want_workload = 1 ] && ! workload_api; then
    echo WORKLOAD_API=1 >>"$FEATURES"
    step "Workload API on (feature gate $WORKLOAD_GATES, runtime-config $WORKLOAD_RUNTIME_CONFIG)"
  fi
  local i=0 c
  for c in "${CORE[@]}"; do
    i=$((i + 1))
    if [ "$c" = apiserver ] && workload_api && is_running apiserver &&
      ! started_with apiserver "--feature-gates=$WORKLOAD_GATES"; then
      step "restarting apiserver with the Workload API"
      stop_component apiserver TERM
      start_component apiserver
      restart_api_clients
      continue
    fi
    # An instance started before its API server had a webhook credential gets one now.
    if [ "$c" = apiserver ] && is_running apiserver &&
      ! started_with apiserver "--admission-control-config-file=$DIR/admission.yaml"; then
      step "restarting apiserver with its webhook credential (admission configuration)"
      stop_component apiserver TERM
      start_component apiserver
      restart_api_clients
      continue
    fi
    if is_running "$c" && healthy "$c"; then
      step "$c already running ($i/${#CORE[@]})"
      continue
    fi
    step "starting $c ($i/${#CORE[@]})"
    start_component "$c"
  done
  wait_default_serviceaccount
  workload_api && wait_workload_api
  create_nodes "$nodes"
  step "cluster '$NAME' up in $((SECONDS - t0))s: API $(api_url), eval \"\$(TAREMA_CLUSTER_NAME=$NAME hack/cluster.sh env)\""
}

# The Workload API is served once the API server's discovery lists it (its aggregated
# discovery may lag the readyz answer by a moment).
wait_workload_api() {
  local deadline=$((SECONDS + START_TIMEOUT))
  until api GET "/apis/$WORKLOAD_API_VERSION" 2>/dev/null | jq -e '.resources[] | select(.name == "workloads")' >/dev/null; do
    [ $SECONDS -ge $deadline ] && die "the API server (Kubernetes $KUBERNETES_VERSION) does not serve $WORKLOAD_API_VERSION workloads ${START_TIMEOUT}s after start with --feature-gates=$WORKLOAD_GATES (log: $LOGS/apiserver.log)"
    sleep 0.2
  done
}

# Pods need their namespace's `default` ServiceAccount (admission rejects them without it);
# kube-controller-manager creates it shortly after start.
wait_default_serviceaccount() {
  local deadline=$((SECONDS + START_TIMEOUT))
  until api GET /api/v1/namespaces/default/serviceaccounts/default >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && die "kube-controller-manager did not create ServiceAccount default/default within ${START_TIMEOUT}s (log: $LOGS/controller-manager.log)"
    sleep 0.2
  done
}

cmd_down() {
  if [ ! -d "$DIR" ]; then
    drop_lock
    step "cluster '$NAME' is not up: nothing to stop"
    return 0
  fi
  [ -f "$DIR/ports.env" ] && . "$DIR/ports.env"
  local c pids=""
  for c in provisioner scheduler pod-deleter kwok controller-manager apiserver etcd; do
    if is_running "$c"; then
      pids+="$(pid_of "$c") "
      step "stopping $c (pid $(pid_of "$c"))"
      stop_component "$c" TERM
    fi
  done
  # A component of this instance whose pid file was lost (say) is still found by its binary
  # and state dir, and stopped by pid.
  local left pid
  left=$(leftover_pids)
  for pid in $left; do
    step "stopping leftover process $pid ($(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-80))"
    kill -s KILL "$pid" 2>/dev/null || true
  done
  [ -n "$left" ] && sleep 0.5
  left=$(leftover_pids)
  [ -z "$left" ] || die "processes still running for cluster '$NAME': $left"
  # The stopped processes are zombies until init reaps them; give it a moment so that ps
  # right after `down` shows nothing (a zombie left after that is dead all the same).
  local i p
  for i in $(seq 1 30); do
    left=""
    for p in $pids; do [ -d "/proc/$p" ] && left+="$p "; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  rm -rf "$DIR"
  drop_lock
  step "cluster '$NAME' stopped, state removed"
}

# Component processes of this instance: one of the binaries this script starts, with this
# instance's state dir in a flag (a zombie's command line is empty). The pattern is written
# so that grep's own command line does not match it.
leftover_pids() {
  local f pid argv0
  for f in $(grep -laE -- "=$(printf '%s' "$DIR/" | sed 's#[.]#[.]#g; s#/#[/]#g')" /proc/[0-9]*/cmdline 2>/dev/null); do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    argv0=$(tr '\0' '\n' 2>/dev/null <"$f" | head -n 1)
    case $argv0 in
      # Any version's binaries (an instance left from before the per-version layout too).
      "$TOOLS_BIN"/etcd | "$TOOLS_BIN"/kube-apiserver | "$TOOLS_BIN"/kube-controller-manager | \
        "$TOOLS_BIN"/kube-scheduler | "$TOOLS_BIN"/kwok | "$TOOLS_BIN"/hostpath-provisioner | \
        "$TAREMA_CACHE"/k8s/*/bin/kube-*) echo "$pid" ;;
      *python3*) tr '\0' '\n' 2>/dev/null <"$f" | grep -q '/hack/kwok/pod_deleter[.]py$' && echo "$pid" ;;
    esac
  done
  return 0
}

cmd_status() {
  if [ ! -f "$DIR/ports.env" ]; then
    echo "cluster '$NAME': not up ($DIR does not exist)"
    return 1
  fi
  . "$DIR/ports.env"
  local ok=0 c state
  echo "cluster '$NAME' ($DIR)"
  for c in "${CORE[@]}" scheduler; do
    if is_running "$c"; then
      if healthy "$c"; then state="running (pid $(pid_of "$c"), healthy)"; else state="running (pid $(pid_of "$c")), NOT healthy"; [ "$c" = scheduler ] || ok=1; fi
    else
      state="not running"
      [ "$c" = scheduler ] || ok=1
    fi
    printf '  %-20s %s\n' "$c" "$state"
  done
  local ver
  if ver=$(api GET /version 2>/dev/null | jq -r .gitVersion); then
    printf '  %-20s %s\n' API "reachable at $(api_url) ($ver; binaries $K8S_BIN)"
    local nodes
    nodes=$(api GET /api/v1/nodes | jq -r '"\([.items[] | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length)/\(.items | length)"')
    printf '  %-20s %s\n' nodes "Ready $nodes"
    workload_api && printf '  %-20s %s\n' "Workload API" "on ($WORKLOAD_RUNTIME_CONFIG; kube-scheduler with $WORKLOAD_SCHEDULER_GATES)"
  else
    printf '  %-20s %s\n' API "NOT reachable at $(api_url)"
    ok=1
  fi
  return $ok
}

cmd_env() {
  require_instance
  echo "export KUBECONFIG=$DIR/admin.kubeconfig"
  echo "export TAREMA_CLUSTER_DIR=$DIR"
  echo "export TAREMA_CLUSTER_NAME=$NAME"
  echo "export TAREMA_APISERVER_URL=$(api_url)"
  if workload_api; then echo "export TAREMA_WORKLOAD_API=1"; else echo "unset TAREMA_WORKLOAD_API"; fi
  # The instance's Kubernetes version, so tests (and build-e2e.sh) follow the cluster.
  echo "export TAREMA_K8S_VERSION=$KUBERNETES_VERSION"
  # First on PATH, so `kubectl` is the one built for this Kubernetes version ($TOOLS_BIN may
  # still hold an older kubectl from before the per-version layout: it comes second).
  case $PATH in
    "$K8S_BIN:$TOOLS_BIN":*) ;;
    *) echo "export PATH=$K8S_BIN:$TOOLS_BIN:\$PATH" ;;
  esac
}

cmd_nodes() {
  [ $# -eq 1 ] || die "usage: hack/cluster.sh nodes FILE"
  require_instance
  healthy apiserver || die "the API of cluster '$NAME' does not answer at $(api_url): run hack/cluster.sh up"
  create_nodes "$1"
}

cmd_kill() {
  [ $# -eq 1 ] || die "usage: hack/cluster.sh kill COMPONENT"
  local c
  c=$(component_name "$1")
  require_instance
  is_running "$c" || die "$c of cluster '$NAME' is not running"
  step "killing $c (pid $(pid_of "$c"))"
  stop_component "$c" KILL
}

cmd_start() {
  [ $# -eq 1 ] || die "usage: hack/cluster.sh start COMPONENT"
  local c
  c=$(component_name "$1")
  require_instance
  [ "$c" = scheduler ] && { cmd_scheduler start; return; }
  [ "$c" = provisioner ] && { cmd_provisioner start; return; }
  step "starting $c"
  start_component "$c"
  case $c in
    apiserver) restart_api_clients ;;
    etcd) is_running apiserver && { wait_api_recovered; restart_api_clients; } ;;
  esac
  step "$c healthy"
}

# After the API was away, the client-go programs of the instance are not usable for a while:
# their reflectors retried while the API was down and back off exponentially (0.8 s doubling to
# 30 s, jittered up to twice that), and a restarted kube-apiserver serves requests before its
# RBAC authorizer has loaded the roles, so identities outside system:masters (the
# controller-manager and the scheduler) get 403 Forbidden in its first second, which backs
# them off further. A new namespace then got no `default` ServiceAccount (pods: 403) and
# pending pods stayed unscheduled for up to a minute. Both are stateless here (no leader
# election), so they are restarted once the API is ready: their first list succeeds at once.
# kwok is left running: it holds the countdown of every running pod's tarema.io/duration, and
# as a system:masters client it is never refused.
restart_api_clients() {
  local c
  for c in controller-manager scheduler; do
    is_running "$c" || continue
    step "restarting $c so that it does not wait out client-go's reconnect backoff"
    stop_component "$c" TERM
    start_component "$c"
  done
}

# After an etcd restart the apiserver reconnects its many etcd clients one by one, with
# backoff; a client (kwok, say) that starts meanwhile can get errors it never retries. Wait
# until reads of the resources kwok and schedulers use succeed a few times in a row.
wait_api_recovered() {
  local ok=0 deadline=$((SECONDS + START_TIMEOUT)) p
  while [ $ok -lt 3 ]; do
    ok=$((ok + 1))
    for p in /readyz /api/v1/nodes /api/v1/pods /apis/coordination.k8s.io/v1/leases \
      /api/v1/namespaces /api/v1/serviceaccounts /api/v1/configmaps /apis/batch/v1/jobs; do
      api GET "$p?limit=1" >/dev/null 2>&1 || { ok=0; break; }
    done
    [ $SECONDS -ge $deadline ] && die "the apiserver does not serve reads again ${START_TIMEOUT}s after the etcd restart (log: $LOGS/apiserver.log)"
    sleep 0.3
  done
}

cmd_scheduler() {
  local sub=${1:-}
  shift || true
  require_instance
  case $sub in
    start)
      [ $# -le 1 ] || die "usage: hack/cluster.sh scheduler start [CONFIG]"
      if is_running scheduler; then
        [ $# -eq 0 ] || die "kube-scheduler of cluster '$NAME' is already running: stop it first to use $1"
        wait_healthy scheduler
        step "kube-scheduler already running"
        return
      fi
      scheduler_config "${1:-}"
      step "starting kube-scheduler"
      start_component scheduler
      step "kube-scheduler healthy on 127.0.0.1:$SCHEDULER_PORT"
      ;;
    stop)
      [ $# -eq 0 ] || die "usage: hack/cluster.sh scheduler stop"
      if is_running scheduler; then
        step "stopping kube-scheduler (pid $(pid_of scheduler))"
        stop_component scheduler TERM
      fi
      ;;
    *) die "usage: hack/cluster.sh scheduler start [CONFIG] | scheduler stop" ;;
  esac
}

cmd_provisioner() {
  local sub=${1:-}
  require_instance
  case $sub in
    start)
      if is_running provisioner; then
        step "hostpath-provisioner already running"
        return
      fi
      # not part of `up`'s tools: built on first use (cached like the others)
      [ -x "$TOOLS_BIN/hostpath-provisioner" ] || bash "$HACK_DIR/build-controlplane.sh"
      mkdir -p "$DIR/volumes"
      step "starting hostpath-provisioner (tarema.local/hostpath)"
      start_component provisioner
      step "hostpath-provisioner running"
      ;;
    stop)
      if is_running provisioner; then
        step "stopping hostpath-provisioner (pid $(pid_of provisioner))"
        stop_component provisioner TERM
      fi
      ;;
    *) die "usage: hack/cluster.sh provisioner start | provisioner stop" ;;
  esac
}

# The scheduler's configuration: the given KubeSchedulerConfiguration (or an empty one), with
# this instance's kubeconfig, leader election off, and an unthrottled client unless the file
# sets qps/burst itself.
scheduler_config() {
  local src=$1 json='{}'
  if [ -n "$src" ]; then
    [ -f "$src" ] || die "scheduler config $src not found"
    json=$(yaml_to_json "$src" 2>&1) || die "scheduler config $src is not valid YAML: $json"
    jq -e 'type == "object" and .kind == "KubeSchedulerConfiguration"' <<<"$json" >/dev/null ||
      die "scheduler config $src is not a KubeSchedulerConfiguration (kind: KubeSchedulerConfiguration, apiVersion: kubescheduler.config.k8s.io/v1)"
  fi
  jq --arg kc "$DIR/scheduler.kubeconfig" '
    .apiVersion //= "kubescheduler.config.k8s.io/v1" | .kind = "KubeSchedulerConfiguration"
    | .clientConnection.kubeconfig = $kc
    | .clientConnection.qps //= 5000 | .clientConnection.burst //= 10000
    | .leaderElection.leaderElect = false' <<<"$json" >"$DIR/scheduler-config.yaml"
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
}

# One command at a time per instance (lock_instance in hack/lib.sh).
LOCK=$CLUSTERS/.$NAME.lock

cmd=${1:-}
shift || true
case $cmd in
  up | down | nodes | kill | start | scheduler | provisioner) lock_instance 600 "cluster '$NAME' (hack/cluster.sh)" ;;
esac
case $cmd in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status || exit 1 ;;
  env) cmd_env ;;
  nodes) cmd_nodes "$@" ;;
  kill) cmd_kill "$@" ;;
  start) cmd_start "$@" ;;
  scheduler) cmd_scheduler "$@" ;;
  provisioner) cmd_provisioner "$@" ;;
  -h | --help | help | "") usage ;;
  *) echo "unknown command '$cmd'" >&2; usage ;;
esac
