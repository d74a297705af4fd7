#!/usr/bin/env bash
# tests/e2e/sizing_nextflow_test.sh: the sizing webhook on the pods a real, unmodified Nextflow
# 24.10.0 creates (k8s executor, tests/fixtures/nextflow's pipeline and configuration as they
# are; only the storage path, `k8s.cleanup = false` so the pods stay to be inspected, and a
# retry strategy are this test's own):
#   - history: every process of the pipeline with 3 completed runs (peaks 40, 20, 300 and
#     5 MiB), ingested under the pipeline's workflow name;
#   - `tarema-labeler webhook` registered for namespace `nextflow`, labelled
#     tarema.io/sizing=enabled; tarema-scheduler and hack/taskrunner.py run the pods;
#   - the run exits 0, and every task pod Nextflow created carries its process's bucket as
#     memory request and limit (below the 512 MB the configuration declares, an upper bound)
#     and cpu 1 (the declared cpus bound the history's);
#   - the webhook found the pods by Nextflow's own labels (nextflow.io/processName, taskName,
#     runName) and the tarema.io/workflow annotation of the configuration.
# Needs KUBECONFIG and DATABASE_URL; Nextflow from hack/nextflow.sh (cached after the first
# install).
# e2e-run: alone (tests/run.sh runs it with no other test beside it): namespace nextflow and scheduler tarema shared with nextflow_pipeline
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

FIX=$REPO_ROOT/tests/fixtures/nextflow
W=tarema-e2e/nf-small # manifest.name and the tarema.io/workflow annotation of nextflow.config
NS=nextflow           # k8s.namespace of nextflow.config
ID=$SCHED_E2E_ID
RUN=sizing-history-$ID
hook=tarema-sizing-nf-$ID
TLS=$REPO_ROOT/tests/fixtures/tls
NF_TIMEOUT=${NF_TIMEOUT:-300}
work=$(mktemp -d)
chmod 755 "$work"
hook_pid=
runner_pid=
drop_volumes() {
  kubectl -n "$NS" patch pvc nextflow-work --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kubectl patch pv nextflow-work --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kubectl delete pv nextflow-work --wait=false >/dev/null 2>&1
}
cleanup() {
  stop_schedulers
  for p in $runner_pid $hook_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  kubectl delete mutatingwebhookconfiguration "$hook" --wait=false >/dev/null 2>&1
  kubectl -n "$NS" delete pods --all --wait=false >/dev/null 2>&1
  drop_volumes
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$W' AND run_name = '$RUN'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
give_up() { fail "$1" "$2"; summary; exit 1; }

if out=$(bash hack/nextflow.sh install 24.10.0 2>&1); then
  pass "Nextflow 24.10.0 installed from Maven Central (cached)"
else
  give_up "Nextflow installs with hack/nextflow.sh" "$out"
fi

# ---- the namespace Nextflow needs (k8s.yaml), opted in to sizing ---------------------------
check "the paper's nodes exist" bash hack/cluster.sh nodes tests/fixtures/nodes/paper-5442.yaml
drop_volumes
if kubectl get namespace "$NS" >/dev/null 2>&1; then
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  wait_for 60 bash -c "! kubectl get namespace $NS" || give_up "namespace $NS from an earlier run goes away" "$(kubectl get namespace "$NS" -o yaml | tail -5)"
fi
wait_for 30 bash -c "! kubectl get pv nextflow-work" || give_up "volume nextflow-work from an earlier run goes away" ""
mkdir -p "$work/storage"
sed "s#path: /workspace\$#path: $work/storage#" "$FIX/k8s.yaml" >"$work/k8s.yaml"
check "k8s.yaml applies" kubectl apply -f "$work/k8s.yaml"
check "namespace $NS opted in (tarema.io/sizing=enabled)" kubectl label namespace "$NS" tarema.io/sizing=enabled
token=$(kubectl -n "$NS" create token nextflow --duration=1h 2>&1) || give_up "a token for ServiceAccount nextflow" "$token"
kubectl config view --raw --minify -o json | jq --arg t "$token" --arg ns "$NS" '
  .users = [{name: "nextflow", user: {token: $t}}] | .contexts[0].context.user = "nextflow" |
  .contexts[0].context.namespace = $ns' >"$work/nextflow.kubeconfig"

# ---- history: 3 runs per process, peaks in MiB -----------------------------------------------
M=1048576
{
  printf 'task_id\thash\tname\tprocess\tstatus\texit\trealtime\t%%cpu\tpeak_rss\n'
  i=0
  for pp in MAKE_DATA:40 CHECKSUM:20 BIG_TABLE:300 SUMMARY:5; do
    for s in 1 2 3; do
      i=$((i + 1))
      printf '%d\t%02d/e2e%s\tNF_SMALL:%s (s%d)\tNF_SMALL:%s\tCOMPLETED\t0\t2000\t100.0\t%d\n' \
        "$i" "$i" "$ID" "${pp%%:*}" "$s" "${pp%%:*}" $((${pp##*:} * M))
    done
  done
} >"$work/history.txt"
check "history of the 4 processes stored" "$BIN/tarema-labeler" ingest --workflow "$W" --run "$RUN" "$work/history.txt"

# ---- webhook, scheduler, task runner -----------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
HPORT=$(free_port)
"$BIN/tarema-labeler" webhook --bind 127.0.0.1 --port "$PORT" --health-port "$HPORT" \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" --strategy quantized \
  >"$work/webhook.log" 2>&1 &
hook_pid=$!
wait_for 30 curl -sf "http://127.0.0.1:$HPORT/readyz" && pass "webhook ready" || give_up "webhook ready" "$(tail -5 "$work/webhook.log")"
kubectl apply -f - >/dev/null <<EOF || give_up "webhook registered" ""
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: $hook}
webhooks:
  - name: sizing.tarema.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    timeoutSeconds: 5
    clientConfig: {url: "https://127.0.0.1:$PORT/mutate", caBundle: $(base64 -w0 <"$TLS/ca.crt")}
    namespaceSelector: {matchLabels: {tarema.io/sizing: enabled}}
    rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
EOF
start_scheduler "$work/sched.log" --namespaces "$NS" --policy round-robin && pass "tarema-scheduler ready" ||
  give_up "tarema-scheduler starts" "$(tail -5 "$work/sched.log")"
python3 hack/taskrunner.py --namespace "$NS" --concurrency 2 --log-dir "$work/pod-logs" >"$work/runner.out" 2>"$work/runner.err" &
runner_pid=$!
wait_for 20 grep -q '^ready' "$work/runner.out" && pass "hack/taskrunner.py runs the pods" || give_up "taskrunner starts" "$(cat "$work/runner.err")"

# ---- the run ---------------------------------------------------------------------------------
cat >"$work/extra.config" <<'EOF'
// this test's own: keep the task pods to inspect them; retry OOM kills as docs/nextflow.md says
k8s.cleanup = false
process.errorStrategy = { task.exitStatus in 137..140 ? 'retry' : 'terminate' }
process.maxRetries = 2
EOF
mkdir -p "$work/run"
(cd "$work/run" && NXF_ANSI_LOG=false KUBECONFIG=$work/nextflow.kubeconfig timeout "$NF_TIMEOUT" \
  bash "$REPO_ROOT/hack/nextflow.sh" run 24.10.0 run "$FIX/main.nf" -c "$work/extra.config" \
  --storage "$work/storage" -with-trace "$work/trace.txt") >"$work/run.log" 2>&1
rc=$?
[ "$rc" = 0 ] && pass "Nextflow 24.10.0 (k8s executor) exits 0 with sized pods" ||
  give_up "Nextflow run exits 0" "exit $rc; $(tail -n 15 "$work/run.log"); $(grep -E 'ERROR|Caused by' "$work/run/.nextflow.log" 2>/dev/null | head -5)"

kubectl -n "$NS" get pods -o json | jq -r '.items[] | select(.metadata.labels["nextflow.io/app"] == "nextflow") |
  [.metadata.name, .metadata.labels["nextflow.io/processName"], .spec.containers[0].resources.requests.memory,
   .spec.containers[0].resources.limits.memory, .spec.containers[0].resources.requests.cpu] | @tsv' >"$work/pods.tsv"
n=$(wc -l <"$work/pods.tsv")
[ "$n" = 12 ] && pass "12 task pods kept (k8s.cleanup = false)" || fail "12 task pods" "$n: $(cat "$work/pods.tsv")"
bad=$(awk -F'\t' '{ want["NF_SMALL_MAKE_DATA"] = "40Mi"; want["NF_SMALL_CHECKSUM"] = "20Mi";
                    want["NF_SMALL_BIG_TABLE"] = "300Mi"; want["NF_SMALL_SUMMARY"] = "5Mi"
                    if ($3 != want[$2] || $4 != want[$2] || $5 != "1") print }' "$work/pods.tsv")
[ -z "$bad" ] && [ "$n" -gt 0 ] && pass "every task pod has its process's bucket (40/20/300/5 Mi, request = limit, cpu 1), not the declared 512 MB" ||
  fail "task pods sized from history" "$bad"
n=$(grep -c "process=NF_SMALL_.* workflow=tarema-e2e_nf-small: history" "$work/webhook.log")
[ "$n" -ge 12 ] && pass "the webhook matched Nextflow's labels and the workflow annotation ($n pods)" ||
  fail "webhook matched the pods" "$n; $(tail -n 5 "$work/webhook.log")"
summary
