#!/usr/bin/env bash
# tests/data/proto/capture.sh: records what a real kube-apiserver sends as protobuf
# (application/vnd.kubernetes.protobuf) and, for the same objects, as JSON, into this folder.
# tests/unit/lib_kube_proto_test.c decodes the protobuf files and compares them field by field
# with the JSON ones. Re-runnable: it starts the local control plane (hack/cluster.sh up; an
# instance already up is reused; TAREMA_CLUSTER_NAME, default proto-capture, names it), makes
# its own namespace, and rewrites every file. Takes about a minute.
#
#   pods.pb / pods.json    the pod list of namespace proto-capture (3 pods using many fields),
#                          the JSON one read at the exact resourceVersion of the protobuf one
#   nodes.pb / nodes.json  the node list, same way
#   watch.pb / watch.json  one watch of that namespace from the list's resourceVersion, opened
#                          twice at once (protobuf, JSON) with allowWatchBookmarks=true and
#                          timeoutSeconds=WATCH_SECONDS: ADDED, MODIFIED (a label, kwok's status
#                          updates), DELETED, and the BOOKMARK the server sends 2 s before the end
#   gone.pb / gone.json    a watch from resourceVersion 1 once etcd is compacted: the ERROR
#                          event with a 410 Status
#
# curl with the cluster's admin client certificate, loopback only (kubectl get --raw cannot set
# Accept).
set -euo pipefail
# An instance of its own by default: the capture restarts its API server.
export TAREMA_CLUSTER_NAME=${TAREMA_CLUSTER_NAME:-proto-capture}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
cd "$ROOT"
NS=proto-capture
WATCH_SECONDS=${WATCH_SECONDS:-12}
PB=application/vnd.kubernetes.protobuf

bash hack/cluster.sh up >&2
eval "$(bash hack/cluster.sh env)"
PKI=$TAREMA_CLUSTER_DIR/pki
api() { # ACCEPT PATH [curl args...]
  local accept=$1 path=$2
  shift 2
  curl -sS --fail --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    -H "Accept: $accept" "$@" "$TAREMA_APISERVER_URL$path"
}
die() { echo "error: capture.sh: $*" >&2; exit 1; }
# wait_until SECONDS COMMAND...: polls until COMMAND succeeds.
wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}

kubectl delete namespace "$NS" --ignore-not-found --wait=true >&2
kubectl create namespace "$NS" >&2
nodes=($(kubectl get nodes -o jsonpath='{.items[*].metadata.name}'))
[ ${#nodes[@]} -ge 2 ] || die "the cluster has fewer than 2 nodes"
kubectl -n "$NS" create configmap owner --from-literal=k=v >&2
owner_uid=$(kubectl -n "$NS" get configmap owner -o jsonpath='{.metadata.uid}')

# Pods bound by spec.nodeName (kwok runs them), using the fields the scheduler reads:
# requests and limits, labels, node selector and affinity, pod (anti-)affinity, tolerations,
# host ports, spread constraints, an owner, init containers, probes with both int-or-string
# forms, priority.
kubectl -n "$NS" apply -f - >&2 <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  labels: {app: web, tier: front}
  annotations: {note: "protobuf capture"}
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: "$owner_uid", controller: true}
spec:
  nodeName: ${nodes[0]}
  priority: 0
  nodeSelector: {kubernetes.io/os: linux}
  tolerations:
  - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: kubernetes.io/os, operator: In, values: [linux]}
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 50
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
  containers:
  - name: main
    image: registry.example/web:1.0
    ports: [{name: http, containerPort: 8080, hostPort: 18080, protocol: TCP}]
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: "1", memory: 128Mi}
    readinessProbe: {httpGet: {path: /ready, port: http}}
    livenessProbe: {tcpSocket: {port: 8080}}
---
apiVersion: v1
kind: Pod
metadata:
  name: batch-1
  labels: {app: batch}
spec:
  nodeName: ${nodes[1]}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
     labelSelector: {matchLabels: {app: batch}}}
  initContainers:
  - {name: init, image: registry.example/init:1, resources: {requests: {cpu: "2", memory: 1Gi}}}
  containers:
  - name: work
    image: registry.example/batch:2
    env: [{name: MODE, value: fast}]
    resources: {requests: {cpu: 1500m, memory: 2Gi, ephemeral-storage: 1G}}
  - {name: side, image: registry.example/side:3, resources: {requests: {cpu: 100m}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: pending-2
  labels: {app: pending}
spec:
  schedulerName: tarema
  containers:
  - {name: c, image: registry.example/c:1, resources: {requests: {cpu: 500m, memory: 256Mi}}}
EOF
running() { [ "$(kubectl -n "$NS" get pod "$1" -o jsonpath='{.status.phase}')" = Running ]; }
wait_until 60 running web-0 || die "pod web-0 did not get Running (kwok)"
wait_until 60 running batch-1 || die "pod batch-1 did not get Running (kwok)"

# Both lists at one resourceVersion: take the current one, then ask each encoding for it
# exactly (served from etcd at that revision).
capture_pair() { # path name
  local rv
  rv=$(kubectl get --raw "$1" | jq -r .metadata.resourceVersion)
  api "$PB" "$1?resourceVersion=$rv&resourceVersionMatch=Exact" -o "$HERE/$2.pb"
  api application/json "$1?resourceVersion=$rv&resourceVersionMatch=Exact" | jq . >"$HERE/$2.json"
  echo "$rv"
}
pods_rv=$(capture_pair "/api/v1/namespaces/$NS/pods" pods)
capture_pair /api/v1/nodes nodes >/dev/null

# The watch, twice at once from the pod list's resourceVersion; each ends by itself when the
# server's timeout closes it.
wq="allowWatchBookmarks=true&resourceVersion=$pods_rv&timeoutSeconds=$WATCH_SECONDS"
api "$PB;stream=watch" "/api/v1/namespaces/$NS/pods?watch=1&$wq" -N -o "$HERE/watch.pb" &
pb_pid=$!
api application/json "/api/v1/namespaces/$NS/pods?watch=1&$wq" -N -o "$HERE/watch.json" &
js_pid=$!
kubectl -n "$NS" run added-3 --image=registry.example/x:1 --restart=Never \
  --overrides="{\"spec\":{\"nodeName\":\"${nodes[0]}\"}}" >&2
kubectl -n "$NS" label pod web-0 stage=modified >&2
kubectl -n "$NS" delete pod pending-2 --grace-period=0 --force >&2 2>/dev/null || true
wait "$pb_pid" || die "the protobuf watch failed"
wait "$js_pid" || die "the JSON watch failed"
for t in ADDED MODIFIED DELETED BOOKMARK; do
  jq -s -e --arg t "$t" 'any(.[]; .type == $t)' "$HERE/watch.json" >/dev/null ||
    die "the watch captured no $t event (raise WATCH_SECONDS?)"
done

# A watch from a compacted resourceVersion: one ERROR event carrying a 410 Status. etcd is
# compacted to its current revision first (through its HTTP gateway, as
# tests/e2e/lib_kube_watch_test.c does), and the watch asks for resourceVersion 1, older than
# both etcd's history and the API server's watch cache. The API server is restarted after the
# compaction: a young cache holds every event since it started (nothing evicted yet) and would
# replay them instead of answering 410.
. "$TAREMA_CLUSTER_DIR/ports.env"
etcd=http://127.0.0.1:$ETCD_PORT
rev=$(curl -sS --fail -X POST -d '{"key":"YQ=="}' "$etcd/v3/kv/range" | jq -r .header.revision)
curl -sS --fail -X POST -d "{\"revision\":\"$rev\",\"physical\":true}" "$etcd/v3/kv/compaction" >/dev/null ||
  die "etcd compaction failed"
bash hack/cluster.sh kill apiserver >&2
bash hack/cluster.sh start apiserver >&2
wait_until 60 kubectl get --raw /readyz || die "the API server did not come back"
gq="resourceVersion=1&timeoutSeconds=5"
api "$PB;stream=watch" "/api/v1/namespaces/$NS/pods?watch=1&$gq" -N -o "$HERE/gone.pb"
api application/json "/api/v1/namespaces/$NS/pods?watch=1&$gq" -N -o "$HERE/gone.json"
jq -s -e 'any(.[]; .type == "ERROR" and .object.code == 410)' "$HERE/gone.json" >/dev/null ||
  die "the watch from resourceVersion 1 gave no 410 ERROR event"

kubectl delete namespace "$NS" --wait=false >&2
ls -l "$HERE"/*.pb "$HERE"/*.json >&2
echo "captured into $HERE" >&2
