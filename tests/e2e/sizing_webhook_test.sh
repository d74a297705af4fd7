#!/usr/bin/env bash
# tests/e2e/sizing_webhook_test.sh: `tarema-labeler webhook` registered on the real API server
# (MutatingWebhookConfiguration with the test CA as caBundle, failurePolicy Ignore, opt-in by
# the namespace label tarema.io/sizing=enabled), sizing pods shaped like Nextflow 24.10's task
# pods from a history stored by `tarema-labeler ingest`:
#   - a task pod of an opted-in namespace gets its process's first bucket (requests.cpu,
#     requests.memory, limits.memory); a declared memory is an upper bound;
#   - a retry (same nextflow.io/taskName and runName) after an OOMKilled attempt gets the next
#     bucket, and after the last bucket the whole largest node;
#   - a process without history gets its declaration; opted-out (annotation), non-task and
#     malformed pods, and pods of a namespace without the label, are unchanged;
#   - with the webhook down, pods are still created (Ignore), unchanged.
# History: process SZ:BIG with peaks 1, 1, 1, 8 GiB at 150 % cpu; --strategy quantized
# --buckets 2 makes the chain 1 GiB, 8 GiB (ranks ceil(4/2) = 2 and 4), cores 1.5.
# Also: `tarema-labeler serve` publishes the process's buckets and recommendation in its
# TaskProfile's status.sizing (the CRD keeps the field).
# Needs KUBECONFIG and DATABASE_URL (hack/cluster.sh, hack/postgres.sh).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

ID=$(printf '%05d' $((RANDOM % 100000)))
ns=szw-$ID
ns_off=szw-off-$ID
wf=e2e-sizing-$ID
hook=tarema-sizing-e2e-$ID
TLS=$REPO_ROOT/tests/fixtures/tls
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  kubectl delete mutatingwebhookconfiguration "$hook" --wait=false >/dev/null 2>&1
  kubectl delete namespace "$ns" "$ns_off" --wait=false >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$wf'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
HPORT=$(free_port)

# ---- history ----------------------------------------------------------------------------
G=1073741824
{
  printf 'task_id\thash\tname\tprocess\tstatus\texit\trealtime\t%%cpu\tpeak_rss\n'
  i=0
  for peak in $G $G $G $((8 * G)); do
    i=$((i + 1))
    printf '%d\t%02d/abcdef\tSZ:BIG (s%d)\tSZ:BIG\tCOMPLETED\t0\t60000\t150.0\t%d\n' "$i" "$i" "$i" "$peak"
  done
} >"$work/trace.txt"
check "history of SZ:BIG stored" "$BIN/tarema-labeler" ingest --workflow "$wf" --run r1 "$work/trace.txt"

# ---- the labeler publishes the buckets and the recommendation in TaskProfile status --------
kubectl create namespace "$ns" >/dev/null && kubectl label namespace "$ns" tarema.io/sizing=enabled >/dev/null
check "TaskProfile CRD applies" apply_shared -f manifests/crds/taskprofile.yaml
kubectl wait --for=condition=Established --timeout=30s crd/taskprofiles.tarema.io >/dev/null
"$BIN/tarema-labeler" serve --bind 127.0.0.1 --port 0 --spool "$work/spool" --namespace "$ns" \
  --groups tests/fixtures/labeler/groups_3.json --resync-seconds 3600 >"$work/serve.log" 2>&1 &
spid=$!
tp_sizing() { kubectl -n "$ns" get taskprofiles -o json | jq -c '.items[] | select(.spec.process == "SZ:BIG") | .status.sizing'; }
tp_ready() { [ "$(tp_sizing | jq -r '.ready')" = true ]; }
if wait_for 30 tp_ready; then
  s=$(tp_sizing)
  # the figures from the history itself (peaks 1, 1, 1, 8 GiB at 150 % cpu), not only from each
  # other: the labeler's plan has one bucket per resource (sz_plan_opts_default), which must cover
  # every sample, so the recommendation is the 8 GiB peak and the runs' 1.5 cores
  jq -e '.samples == 4 and .n.memory == 1 and .buckets.memoryBytes == [8589934592]
         and .recommendation.memoryBytes == 8589934592 and .recommendation.cores == 1.5
         and .recommendation.memoryBytes == .buckets.memoryBytes[0]
         and .recommendation.cores == .buckets.cores[0]
         and (.strategy.memory | IN("quantized", "kmeans", "greedy", "exhaustive", "vpa"))' <<<"$s" >/dev/null &&
    pass "TaskProfile status.sizing: strategy, 4 samples, one bucket at the 8 GiB peak, recommendation 8 GiB and 1.5 cores = first bucket" ||
    fail "TaskProfile status.sizing content" "$s"
else
  fail "TaskProfile status.sizing published (not pruned by the CRD)" "$(tp_sizing); $(tail -n 5 "$work/serve.log")"
fi
kill "$spid" && wait "$spid" 2>/dev/null

# ---- the webhook and its registration ----------------------------------------------------
"$BIN/tarema-labeler" webhook --bind 127.0.0.1 --port "$PORT" --health-port "$HPORT" \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" \
  --strategy quantized --buckets 2 --resync-seconds 2 --log-level debug >"$work/webhook.log" 2>&1 &
pid=$!
if wait_for 30 curl -sf "http://127.0.0.1:$HPORT/readyz"; then
  pass "webhook serves HTTPS and is ready (node sizes read)"
else
  fail "webhook ready" "$(tail -n 5 "$work/webhook.log")"
  summary
  exit 1
fi
kubectl create namespace "$ns_off" >/dev/null
cat >"$work/hook.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: $hook
webhooks:
  - name: sizing.tarema.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:$PORT/mutate
      caBundle: $(base64 -w0 <"$TLS/ca.crt")
    namespaceSelector:
      matchLabels: {tarema.io/sizing: enabled}
    rules:
      - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}
EOF
check "MutatingWebhookConfiguration with the CA bundle registered" kubectl apply -f "$work/hook.yaml"

# pod NAMESPACE NAME PROCESS TASK RESOURCES_JSON [EXTRA_METADATA_YAML]: a pod like Nextflow's.
pod_yaml() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $2
  namespace: $1
  labels:
    nextflow.io/app: nextflow
    nextflow.io/runName: run_$ID
    nextflow.io/taskName: $4
    nextflow.io/processName: $3
    nextflow.io/sessionId: uuid-$ID
  annotations:
    tarema.io/workflow: $wf
    ${6:-}
spec:
  restartPolicy: Never
  containers:
    - name: $2
      image: debian:12-slim
      command: ["true"]
      resources: $5
EOF
}
mkpod() { pod_yaml "$@" | kubectl create -f - -o json; }
res() { kubectl -n "$1" get pod "$2" -o json | jq -c '.spec.containers[0].resources'; }
oomkill() {
  kubectl -n "$1" patch pod "$2" --subresource=status --type=merge -p \
    '{"status":{"phase":"Failed","containerStatuses":[{"name":"'"$2"'","image":"debian:12-slim","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}}' >/dev/null
}
expect() { # NAME NS POD JQ_FILTER
  local got
  got=$(res "$2" "$3")
  if [ -n "$got" ] && jq -e "$4" <<<"$got" >/dev/null; then pass "$1"; else fail "$1" "resources: $got (wanted $4)"; fi
}

# The plans are read at start and on the store's NOTIFY; wait until a server-side dry run
# shows the history's bucket.
dry() { pod_yaml "$ns" probe SZ_BIG SZ_BIG_probe '{"requests": {"cpu": "4"}}' | kubectl create --dry-run=server -f - -o json | jq -r '.spec.containers[0].resources.requests.memory // ""'; }
probe_ok() { [ "$(dry)" = 1Gi ]; }
if wait_for 30 probe_ok; then
  pass "dry run sees the history's first bucket"
else
  fail "dry run sees the history's first bucket" "got '$(dry)'; $(tail -n 5 "$work/webhook.log")"
fi

# ---- opted-in namespace ------------------------------------------------------------------
mkpod "$ns" big-a1 SZ_BIG SZ_BIG_s9 '{"requests": {"cpu": "4"}}' >/dev/null
expect "task pod, memory unset: first bucket 1Gi (request and limit), cpu 1500m" "$ns" big-a1 \
  '.requests.memory == "1Gi" and .limits.memory == "1Gi" and .requests.cpu == "1500m"'
mkpod "$ns" big-b1 SZ_BIG SZ_BIG_s10 '{"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}' >/dev/null
expect "declared memory is an upper bound: 512Mi kept, cpu 1" "$ns" big-b1 \
  '.requests.memory == "512Mi" and .limits.memory == "512Mi" and .requests.cpu == "1"'
oomkill "$ns" big-a1
mkpod "$ns" big-a2 SZ_BIG SZ_BIG_s9 '{"requests": {"cpu": "4"}}' >/dev/null
expect "retry after OOMKilled at 1Gi: next bucket 8Gi" "$ns" big-a2 \
  '.requests.memory == "8Gi" and .limits.memory == "8Gi"'
oomkill "$ns" big-a2
mkpod "$ns" big-a3 SZ_BIG SZ_BIG_s9 '{"requests": {"cpu": "4"}}' >/dev/null
largest=$(kubectl get nodes -o json | jq '[.items[].status.allocatable.memory] | map(capture("(?<n>[0-9]+)(?<u>[KMG]i)?") | (.n | tonumber) * ({"Ki": 1024, "Mi": 1048576, "Gi": 1073741824}[.u // ""] // 1)) | max')
got=$(res "$ns" big-a3 | jq -r '.requests.memory')
gotb=$(python3 -c "import sys; s=sys.argv[1]; u={'Ki':1024,'Mi':1048576,'Gi':1073741824}; print(int(s[:-2])*u[s[-2:]] if s[-2:] in u else int(s))" "$got")
[ "$gotb" = "$largest" ] && pass "retry after the last bucket: the whole largest node ($got)" ||
  fail "retry after the last bucket: the whole largest node" "got $got = $gotb, largest node $largest"
mkpod "$ns" new-1 SZ_NEW SZ_NEW_s1 '{"requests": {"cpu": "2", "memory": "3Gi"}, "limits": {"memory": "3Gi"}}' >/dev/null
expect "process without history: its declaration" "$ns" new-1 \
  '.requests.memory == "3Gi" and .limits.memory == "3Gi" and .requests.cpu == "2"'
mkpod "$ns" off-1 SZ_BIG SZ_BIG_s11 '{"requests": {"cpu": "4"}}' 'tarema.io/sizing: "off"' >/dev/null
expect "opted out by annotation: unchanged" "$ns" off-1 '. == {"requests": {"cpu": "4"}}'
kubectl -n "$ns" run plain --image=debian:12-slim --restart=Never --overrides='{"spec":{"containers":[{"name":"plain","image":"debian:12-slim","resources":{"requests":{"cpu":"4"}}}]}}' >/dev/null 2>&1
expect "not a task pod: unchanged" "$ns" plain '. == {"requests": {"cpu": "4"}}'
pod_yaml "$ns" noproc SZ_BIG SZ_BIG_s12 '{"requests": {"cpu": "4"}}' | sed '/nextflow.io\/processName/d' | kubectl create -f - >/dev/null
expect "task label without a process: unchanged" "$ns" noproc '. == {"requests": {"cpu": "4"}}'

# Malformed reviews straight to the webhook: allowed, no patch (or 400 for a non-review).
review() { curl -s --cacert "$TLS/ca.crt" -H 'Content-Type: application/json' --data "$1" "https://127.0.0.1:$PORT/mutate"; }
out=$(review '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"m1","namespace":"'"$ns"'","object":{"metadata":{"labels":{"nextflow.io/app":"nextflow","nextflow.io/taskName":"T","nextflow.io/processName":"SZ_BIG"}},"spec":{"containers":[{"resources":{"requests":{"memory":"lots"}}}]}}}}')
jq -e '.response.uid == "m1" and .response.allowed == true and (.response.patch == null)' <<<"$out" >/dev/null &&
  pass "malformed pod (bad quantity): allowed, no patch" || fail "malformed pod: allowed, no patch" "$out"
out=$(review '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"m2","object":[1,2]}}')
jq -e '.response.allowed == true and (.response.patch == null)' <<<"$out" >/dev/null &&
  pass "malformed pod (not an object): allowed, no patch" || fail "pod not an object: allowed, no patch" "$out"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TLS/ca.crt" --data '{"nope": 1' "https://127.0.0.1:$PORT/mutate")
[ "$code" = 400 ] && pass "not JSON: 400" || fail "not JSON: 400" "status $code"

# ---- namespace without the label ---------------------------------------------------------
mkpod "$ns_off" big-x SZ_BIG SZ_BIG_s13 '{"requests": {"cpu": "4"}}' >/dev/null
expect "namespace without tarema.io/sizing=enabled: unchanged" "$ns_off" big-x '. == {"requests": {"cpu": "4"}}'

m=$(curl -sf "http://127.0.0.1:$HPORT/metrics")
grep -q 'tarema_webhook_reviews_total{result="retry"} 2' <<<"$m" && grep -q 'tarema_webhook_reviews_total{result="malformed"} 2' <<<"$m" &&
  pass "metrics count the reviews by result (2 retries, 2 malformed)" ||
  fail "metrics count the reviews by result" "$(grep tarema_webhook <<<"$m")"

# ---- webhook down ------------------------------------------------------------------------
kill "$pid" && wait "$pid" 2>/dev/null
pid=
if mkpod "$ns" down-1 SZ_BIG SZ_BIG_s14 '{"requests": {"cpu": "4"}}' >/dev/null 2>"$work/down.err"; then
  pass "webhook down: the pod is still created (failurePolicy Ignore)"
  expect "webhook down: the pod is unchanged" "$ns" down-1 '. == {"requests": {"cpu": "4"}}'
else
  fail "webhook down: the pod is still created" "$(cat "$work/down.err")"
fi
n=$(grep -c "webhook: pod $ns/" "$work/webhook.log")
[ "$n" -ge 7 ] && pass "the webhook logged its decisions ($n)" || fail "the webhook logged its decisions" "$n lines"
summary
