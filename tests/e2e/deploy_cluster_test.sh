#!/usr/bin/env bash
# deploy_cluster_test.sh: the chart against the real, RBAC-enforcing kube-apiserver (run by
# tests/run.sh e2e with KUBECONFIG and DATABASE_URL set).
#   1. `helm template | kubectl apply --dry-run=server` and `helm install` into a fresh
#      namespace (kwok plays the pods once kube-scheduler places them).
#   2. RBAC proven, not assumed: for each component a token is issued (TokenRequest) for its
#      chart ServiceAccount, and the real binary runs here under that token doing its whole
#      job: the profiler runs and labels the Nodes (the per-node bench Jobs' part, publishing
#      the profiles, runs under the bench ServiceAccount's token), the labeler publishes
#      TaskProfiles, the scheduler takes the Lease and binds a pod, marks an impossible pod
#      unschedulable and records events. Actions outside each role are denied.
# Cleans up (helm uninstall, namespace, processes it started) on exit.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): relabels every node, binds to the first node, helm install of unconfined pods
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
PATH=$K8S_BIN:$TOOLS_BIN:$PATH
CHART=$REPO_ROOT/charts/tarema
NS=tarema-deploy-e2e-$$
REL=tarema-e2e$$
WORK=$(mktemp -d)
PIDS=()
STARTED_KSCHED=0

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  helm uninstall "$REL" -n "$NS" --wait=false >/dev/null 2>&1
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  kubectl delete priorityclass "$NS-low" "$NS-high" --wait=false >/dev/null 2>&1
  kubectl get nodes -o name 2>/dev/null | grep "^node/pre$$n" | xargs -r kubectl delete --wait=false >/dev/null 2>&1
  [ $STARTED_KSCHED = 1 ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  restore_node_labels
  rm -rf "$WORK"
}
trap cleanup EXIT

# The profiler labels the shared cluster's nodes (tarema.io/cpu, mem, io, group): put every
# node's tarema.io/* labels back as they were, so no later test meets this test's profile.
kubectl get nodes -o json 2>/dev/null |
  jq -c '[.items[] | {name: .metadata.name, labels: (.metadata.labels // {} | with_entries(select(.key | startswith("tarema.io/"))))}]' \
    >"$WORK/node-labels.json" 2>/dev/null
restore_node_labels() {
  [ -s "$WORK/node-labels.json" ] || return 0
  kubectl get nodes -o json 2>/dev/null | jq -r --slurpfile before "$WORK/node-labels.json" '
    ($before[0] | map({(.name): .labels}) | add // {}) as $b
    | .items[] | .metadata.name as $n | select($b[$n] != null)
    | (.metadata.labels // {} | with_entries(select(.key | startswith("tarema.io/")))) as $now
    | ([$now | keys[] | select($b[$n][.] == null) | . + "-"]
       + [$b[$n] | to_entries[] | select($now[.key] != .value) | "\(.key)=\(.value)"]) as $ops
    | select($ops | length > 0) | "\($n) \($ops | join(" "))"' |
    while read -r node ops; do
      # shellcheck disable=SC2086 # ops is a list of label operations
      kubectl label node "$node" $ops --overwrite >/dev/null 2>&1
    done
}

if [ -z "${KUBECONFIG:-}" ] || ! kubectl get --raw /readyz >/dev/null 2>&1; then
  fail "API server reachable" "KUBECONFIG unset or API down: run through tests/run.sh e2e (or eval \"\$(hack/cluster.sh env)\")"
  summary
  exit 1
fi
for b in tarema-scheduler tarema-labeler tarema-profiler; do
  [ -x "$BIN/$b" ] || { fail "$b built" "$BIN/$b missing: make O=... BINDIR=..."; summary; exit 1; }
done

# ------------------------------------------------------------------ install
kubectl create namespace "$NS" >/dev/null
SETS=(--set postgresql.auth.password=e2e-secret-$$)
check "helm template | kubectl apply --dry-run=server" \
  bash -c "helm template '$REL' '$CHART' -n '$NS' ${SETS[*]} --include-crds | kubectl apply --dry-run=server -f -"
check "extender and CronJob variant passes --dry-run=server too" \
  bash -c "helm template '$REL' '$CHART' -n '$NS' ${SETS[*]} --set scheduler.mode=extender --set extender.enabled=true --set profiler.cronJob.enabled=true --set labeler.spool.persistence.enabled=true | kubectl apply --dry-run=server -f -"

# kwok runs pods only once something binds them: use the real kube-scheduler of this cluster.
ksched_running() { grep -qE '^ +scheduler +running' <<<"$(bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null)"; }
if ! ksched_running; then
  bash "$REPO_ROOT/hack/cluster.sh" scheduler start >/dev/null 2>&1 && STARTED_KSCHED=1
fi
check "helm install into a fresh namespace" helm install "$REL" "$CHART" -n "$NS" "${SETS[@]}"
running() { # running COMPONENT N: N pods of the component Running
  [ "$(kubectl -n "$NS" get pods -l "app.kubernetes.io/instance=$REL,app.kubernetes.io/component=$1" \
    --field-selector=status.phase=Running -o name | wc -l)" -ge "$2" ]
}
if ksched_running; then
  wait_for 60 running scheduler 2 && wait_for 30 running labeler 1 &&
    pass "chart pods Running (kwok): scheduler x2, labeler" ||
    fail "chart pods Running" "$(kubectl -n "$NS" get pods -o wide 2>&1)"
  # The local cluster has no volume provisioner (no kubelets, no storage), so the bundled
  # PostgreSQL's claim stays Pending here; that it exists and is asked for is what is checked.
  kubectl -n "$NS" get pvc "data-$REL-postgresql-0" >/dev/null 2>&1 &&
    pass "bundled PostgreSQL StatefulSet claimed its data volume" ||
    fail "bundled PostgreSQL PVC" "$(kubectl -n "$NS" get pvc,statefulset 2>&1)"
else
  fail "chart pods Running" "kube-scheduler could not be started (hack/cluster.sh scheduler start)"
fi
# Captured first: grep -q stopping early would SIGPIPE helm and fail the pipeline.
status=$(helm status "$REL" -n "$NS" 2>&1)
grep -q 'STATUS: deployed' <<<"$status" && pass "helm status: deployed" || fail "helm status: deployed" "$status"

# ------------------------------------------------------------------ tokens
# kubeconfig_for SA: a kubeconfig holding only a TokenRequest token of the chart's SA.
kubeconfig_for() {
  local sa=$1 token server ca
  token=$(kubectl -n "$NS" create token "$sa" --duration=1h) || return 1
  server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  cat >"$WORK/$sa.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $sa, user: {token: "$token"}}]
contexts: [{name: c, context: {cluster: c, user: $sa, namespace: $NS}}]
current-context: c
KC
  echo "$WORK/$sa.kubeconfig"
}
SA_SCHED=$REL-scheduler SA_LAB=$REL-labeler SA_PROF=$REL-profiler SA_BENCH=$REL-profiler-bench
for sa in "$SA_SCHED" "$SA_LAB" "$SA_PROF" "$SA_BENCH"; do
  kubeconfig_for "$sa" >/dev/null && pass "TokenRequest token for ServiceAccount $sa" ||
    fail "TokenRequest token for ServiceAccount $sa"
done
KC_SCHED=$WORK/$SA_SCHED.kubeconfig KC_LAB=$WORK/$SA_LAB.kubeconfig
KC_PROF=$WORK/$SA_PROF.kubeconfig KC_BENCH=$WORK/$SA_BENCH.kubeconfig

# denied NAME KUBECONFIG KUBECTL-ARGS...: the request is refused with Forbidden.
denied() {
  local name=$1 kc=$2 out
  shift 2
  if out=$(kubectl --kubeconfig "$kc" "$@" 2>&1); then
    fail "denied: $name" "it was allowed: $out"
  elif grep -q 'Forbidden\|forbidden' <<<"$out"; then
    pass "denied: $name"
  else
    fail "denied: $name" "failed, but not with Forbidden: $out"
  fi
}
cani() { # cani SA VERB RESOURCE [-n NS]: kubectl auth can-i as the ServiceAccount says yes
  local sa=$1
  shift
  [ "$(kubectl auth can-i --as="system:serviceaccount:$NS:$sa" "$@" 2>/dev/null)" = yes ]
}

# A throwaway pod in the namespace to try deleting.
kubectl -n "$NS" run victim --image=busybox --restart=Never --overrides='{"spec":{"nodeName":"'"$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')"'"}}' >/dev/null 2>&1 ||
  fail "victim pod created"
NODE1=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')

# ------------------------------------------------------------------ profiler
# kwok nodes run no containers, so the bench Jobs' pods never measure anything: this test
# does their part, publishing each node's profile under the bench ServiceAccount's token, with
# figures shaped like the paper's machine types (label tarema.io/machine-type).
profile() { # profile NODE TYPE
  local cpu mem
  case $2 in
    n2) cpu=$((469 + RANDOM % 2)) mem=$((17700 + RANDOM % 100)) ;;
    c2) cpu=$((522 + RANDOM % 3)) mem=19800 ;;
    *) cpu=$((368 + RANDOM % 17)) mem=$((13100 + RANDOM % 1100)) ;;
  esac
  cat <<JSON
{"node": "$1", "cores": 8, "memory_bytes": 34359738368, "cpu_single_eps": $cpu,
 "cpu_multi_eps": $((cpu * 8)), "mem_mibps": $mem, "seq_read_iops": 481, "seq_write_iops": 483,
 "rand_read_iops": 102, "rand_write_iops": 107, "static": {"machine_type": "$2"}}
JSON
}
mkdir -p "$WORK/profiles"
NODES=$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.tarema\.io/machine-type}{"\n"}{end}')
NNODES=$(grep -c . <<<"$NODES")
while read -r n t; do profile "$n" "${t:-e2}" >"$WORK/profiles/$n.json"; done <<<"$NODES"

# The image the chart gives the profiler (and so its bench Jobs): the admission policy admits
# bench Jobs of that image only.
PROF_IMAGE=$(helm template "$REL" "$CHART" -n "$NS" "${SETS[@]}" -s templates/profiler-job.yaml |
  awk -F= '/--image=/{print $2; exit}')
"$BIN/tarema-profiler" run --kubeconfig "$KC_PROF" --namespace "$NS" --service-account "$SA_BENCH" \
  --image "$PROF_IMAGE" --timeout 90 --log-level warn >"$WORK/prof-run.log" 2>&1 &
PROF_PID=$!
PIDS+=("$PROF_PID")
jobs_created() { [ "$(kubectl -n "$NS" get jobs -l app.kubernetes.io/component=tarema-profile -o name | wc -l)" -ge "$NNODES" ]; }
if wait_for 60 jobs_created; then
  pass "profiler (own token) created one bench Job per node ($NNODES)"
else
  fail "profiler (own token) created one bench Job per node" "$(cat "$WORK/prof-run.log")"
fi
job_sa=$(kubectl -n "$NS" get jobs -l app.kubernetes.io/component=tarema-profile -o jsonpath='{.items[0].spec.template.spec.serviceAccountName}')
[ "$job_sa" = "$SA_BENCH" ] && pass "bench Jobs run as $SA_BENCH" || fail "bench Jobs run as $SA_BENCH" "got '$job_sa'"
check "bench token publishes the node profiles (ConfigMaps)" \
  "$BIN/tarema-profiler" publish --kubeconfig "$KC_BENCH" --namespace "$NS" "$WORK"/profiles/*.json
# A second publish replaces (update) the ConfigMap that exists now.
check "bench token replaces an existing profile ConfigMap" \
  "$BIN/tarema-profiler" publish --kubeconfig "$KC_BENCH" --namespace "$NS" "$WORK/profiles/$NODE1.json"
wait "$PROF_PID"
rc=$?
[ $rc = 0 ] && pass "tarema-profiler run under its token: grouped and applied" ||
  fail "tarema-profiler run under its token" "exit $rc: $(tail -n 20 "$WORK/prof-run.log")"
[ -n "$(kubectl get node "$NODE1" -o jsonpath='{.metadata.labels.tarema\.io/group}')" ] &&
  pass "Nodes carry tarema.io/group labels from the profiler" ||
  fail "Nodes carry tarema.io/group labels" "$(kubectl get nodes -L tarema.io/group 2>&1 | head)"
[ "$(kubectl -n "$NS" get jobs -l app.kubernetes.io/component=tarema-profile -o name | wc -l)" = 0 ] ||
  wait_for 20 bash -c "[ \"\$(kubectl -n $NS get jobs -l app.kubernetes.io/component=tarema-profile -o name | wc -l)\" = 0 ]"
[ $? = 0 ] && pass "profiler deleted its bench Jobs afterwards" || fail "profiler deleted its bench Jobs"
grep -qi 'forbidden' "$WORK/prof-run.log" && fail "profiler log has no Forbidden" "$(grep -i forbidden "$WORK/prof-run.log" | head -3)" ||
  pass "profiler log has no Forbidden"
denied "profiler deletes a pod" "$KC_PROF" -n "$NS" delete pod victim
denied "profiler reads Secrets" "$KC_PROF" -n "$NS" get secrets
denied "profiler creates pods" "$KC_PROF" -n "$NS" run x --image=busybox --restart=Never
denied "bench patches a Node" "$KC_BENCH" label node "$NODE1" tarema.io/x=1
denied "bench deletes a ConfigMap" "$KC_BENCH" -n "$NS" delete configmap "tarema-profile-$NODE1"
denied "bench reads Secrets" "$KC_BENCH" -n "$NS" get secrets
denied "bench lists Jobs" "$KC_BENCH" -n "$NS" get jobs
# refused_by_policy NAME WHY KUBECONFIG KUBECTL-ARGS...: Forbidden by the chart's admission
# policy, with the message of the rule meant (not by RBAC, not by another rule).
refused_by_policy() {
  local name=$1 why=$2 kc=$3 out
  shift 3
  if out=$(kubectl --kubeconfig "$kc" "$@" 2>&1); then
    fail "denied: $name" "it was allowed: $out"
  elif grep -q 'forbidden: ValidatingAdmissionPolicy .* denied request: .*'"$why" <<<"$out"; then
    pass "denied: $name"
  else
    fail "denied: $name" "not by the admission policy rule '$why': $out"
  fi
}
# Issue 13, defect 7: the bench token could replace (PUT) any ConfigMap of the namespace, the
# scheduler's config among them; and the profiler could start Jobs under any ServiceAccount of
# the namespace (the scheduler's: cluster-wide pods/binding) or with any pod spec.
SCHED_CM=$REL-scheduler-config
kubectl -n "$NS" get configmap "$SCHED_CM" -o json >"$WORK/sched-cm.json"
jq '.data["scheduler.yaml"] += "\n# overwritten by the bench\n"' "$WORK/sched-cm.json" >"$WORK/sched-cm-evil.json"
refused_by_policy "bench replaces (update) the scheduler's ConfigMap" "only node profile ConfigMaps" "$KC_BENCH" -n "$NS" replace -f "$WORK/sched-cm-evil.json"
kubectl -n "$NS" get configmap "$SCHED_CM" -o jsonpath='{.data.scheduler\.yaml}' | qgrep 'overwritten by the bench' &&
  fail "scheduler's ConfigMap unchanged" "the bench token overwrote it" || pass "scheduler's ConfigMap unchanged"
refused_by_policy "bench creates a ConfigMap that is not a node profile" "only node profile ConfigMaps" "$KC_BENCH" -n "$NS" create configmap "$REL-scheduler-config-2" --from-literal=a=b
refused_by_policy "bench creates a profile-named ConfigMap without the profile label" "only node profile ConfigMaps" "$KC_BENCH" -n "$NS" create configmap tarema-profile-x --from-literal=a=b
refused_by_policy "profiler deletes the scheduler's ConfigMap" "only node profile ConfigMaps" "$KC_PROF" -n "$NS" delete configmap "$SCHED_CM"
# Put it back when a check above failed, so the scheduler part below runs on the chart's config.
jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.managedFields)' \
  "$WORK/sched-cm.json" | kubectl -n "$NS" apply -f - >/dev/null 2>&1
# bench_job NAME SA [JQ]: the Job the profiler creates for node NODE1, run as SA, changed by JQ.
bench_job() {
  jq -n --arg name "$1" --arg sa "$2" --arg node "$NODE1" --arg img "$PROF_IMAGE" --arg ns "$NS" '
    {apiVersion: "batch/v1", kind: "Job",
     metadata: {name: $name, labels: {"app.kubernetes.io/component": "tarema-profile"}},
     spec: {backoffLimit: 0, template: {
       metadata: {labels: {"app.kubernetes.io/component": "tarema-profile"}},
       spec: {nodeName: $node, restartPolicy: "Never", serviceAccountName: $sa,
              securityContext: {runAsUser: 10001, runAsGroup: 10001, seccompProfile: {type: "RuntimeDefault"}},
              containers: [{name: "bench", image: $img,
                args: ["bench", "--node", $node, "--publish", "--namespace", $ns, "--dir=/scratch"],
                env: [{name: "NODE_NAME", valueFrom: {fieldRef: {fieldPath: "spec.nodeName"}}}],
                volumeMounts: [{name: "scratch", mountPath: "/scratch"}],
                securityContext: {runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false,
                                  capabilities: {drop: ["ALL"]}, seccompProfile: {type: "RuntimeDefault"}}}],
              volumes: [{name: "scratch", emptyDir: {}}]}}}} | '"${3:-.}"
}
PROBES=0
profiler_job_denied() { # profiler_job_denied WHAT WHY SA JQ
  PROBES=$((PROBES + 1))
  bench_job "tarema-profile-probe-$PROBES" "$3" "${4:-.}" >"$WORK/probe-job.json"
  refused_by_policy "profiler creates a Job $1" "$2" "$KC_PROF" -n "$NS" create -f "$WORK/probe-job.json"
  kubectl -n "$NS" delete job "tarema-profile-probe-$PROBES" --ignore-not-found --wait=false >/dev/null 2>&1
}
profiler_job_denied "running as the scheduler's ServiceAccount" "run as ServiceAccount" "$SA_SCHED"
profiler_job_denied "running as the labeler's ServiceAccount" "run as ServiceAccount" "$SA_LAB"
profiler_job_denied "running as the namespace's default ServiceAccount" "run as ServiceAccount" default
profiler_job_denied "naming the scheduler's ServiceAccount in the deprecated serviceAccount field" "run as ServiceAccount" "$SA_BENCH" \
  "del(.spec.template.spec.serviceAccountName) | .spec.template.spec.serviceAccount = \"$SA_SCHED\""
profiler_job_denied "mounting a Secret" "emptyDir volumes and field references only" "$SA_BENCH" \
  ".spec.template.spec.volumes += [{name: \"db\", secret: {secretName: \"$REL-postgresql\"}}]"
profiler_job_denied "reading a Secret into its environment" "emptyDir volumes and field references only" "$SA_BENCH" \
  ".spec.template.spec.containers[0].env += [{name: \"P\", valueFrom: {secretKeyRef: {name: \"$REL-postgresql\", key: \"password\"}}}]"
profiler_job_denied "with another image" "one container, image" "$SA_BENCH" '.spec.template.spec.containers[0].image = "busybox"'
profiler_job_denied "with its own command" "one container, image" "$SA_BENCH" '.spec.template.spec.containers[0].command = ["sh", "-c", "id"]'
profiler_job_denied "with a hostPath volume" "emptyDir volumes and field references only" "$SA_BENCH" '.spec.template.spec.volumes[0] = {name: "scratch", hostPath: {path: "/"}}'
profiler_job_denied "privileged" "no host namespaces, privilege" "$SA_BENCH" '.spec.template.spec.containers[0].securityContext += {privileged: true, allowPrivilegeEscalation: true}'
profiler_job_denied "on the host network" "no host namespaces, privilege" "$SA_BENCH" '.spec.template.spec.hostNetwork = true'
profiler_job_denied "running as root" "non-root with a read-only root" "$SA_BENCH" \
  '.spec.template.spec.securityContext.runAsUser = 0 | .spec.template.spec.containers[0].securityContext.runAsNonRoot = false'
profiler_job_denied "with a writable root filesystem" "non-root with a read-only root" "$SA_BENCH" \
  'del(.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem)'
bench_job tarema-profile-probe "$SA_BENCH" >"$WORK/probe-job.json"
out=$(kubectl --kubeconfig "$KC_PROF" -n "$NS" create -f "$WORK/probe-job.json" 2>&1) &&
  pass "profiler creates a bench Job as $SA_BENCH (the shape tarema-profiler run writes)" ||
  fail "profiler creates a bench Job as $SA_BENCH" "$out"
# A bench pod's token names its node: it writes that node's profile and no other. The probe
# Job's pod (kwok runs it on NODE1) gets a token bound to it, as the kubelet would mount.
probe_pod() { kubectl -n "$NS" get pods -l job-name=tarema-profile-probe -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
if wait_for 30 bash -c "[ -n \"\$(kubectl -n $NS get pods -l job-name=tarema-profile-probe -o name)\" ]"; then
  pod_token=$(kubectl -n "$NS" create token "$SA_BENCH" --bound-object-kind Pod --bound-object-name "$(probe_pod)" --duration=10m)
  sed "s|token: \".*\"|token: \"$pod_token\"|" "$KC_BENCH" >"$WORK/bench-pod.kubeconfig"
  NODE2=$(kubectl get nodes -o jsonpath='{.items[1].metadata.name}')
  jq --arg n "$NODE2" '.node = $n' "$WORK/profiles/$NODE1.json" >"$WORK/other-node.json"
  out=$("$BIN/tarema-profiler" publish --kubeconfig "$WORK/bench-pod.kubeconfig" --namespace "$NS" "$WORK/other-node.json" 2>&1)
  [ $? != 0 ] && grep -q 'only the profile of the node it runs on' <<<"$out" &&
    pass "denied: bench pod on $NODE1 publishes $NODE2's profile" ||
    fail "denied: bench pod on $NODE1 publishes $NODE2's profile" "$out"
  check "bench pod on $NODE1 publishes its own node's profile" \
    "$BIN/tarema-profiler" publish --kubeconfig "$WORK/bench-pod.kubeconfig" --namespace "$NS" "$WORK/profiles/$NODE1.json"
else
  fail "probe bench Job's pod created" "$(kubectl -n "$NS" get jobs,pods 2>&1)"
fi
kubectl -n "$NS" delete job tarema-profile-probe --wait=false >/dev/null 2>&1
refused_by_policy "profiler deletes a Job that is not a bench Job" "only bench Jobs" "$KC_PROF" -n "$NS" delete job "$REL-profiler-run-1"
# kubectl label/patch read the Node first, which the profiler may not: a merge patch as
# tarema-profiler apply sends it (no read), with the profiler's token; prints the HTTP status
# and the message.
api_patch() { # api_patch KUBECONFIG PATH PATCH-TYPE JSON: "HTTP-STATUS message"
  local token server
  token=$(sed -n 's/.*token: "\(.*\)".*/\1/p' "$1")
  server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$WORK/ca.crt"
  curl -s --cacert "$WORK/ca.crt" -H "Authorization: Bearer $token" -X PATCH \
    -H "Content-Type: application/$3-patch+json" --data "$4" -o "$WORK/patch.out" -w '%{http_code}' \
    "$server$2"
  echo " $(jq -r '.message // empty' "$WORK/patch.out" 2>/dev/null)"
}
node_patch() { api_patch "$KC_PROF" "/api/v1/nodes/$NODE1" merge "$1"; }
node_patch_denied() { # node_patch_denied NAME WHY PATCH
  local out
  out=$(node_patch "$3")
  [[ $out == "403 "*"ValidatingAdmissionPolicy"*"$2"* ]] && pass "denied: profiler $1" ||
    fail "denied: profiler $1" "not refused by the rule '$2': $out"
}
mt_label=$(kubectl get node "$NODE1" -o jsonpath='{.metadata.labels.tarema\.io/machine-type}')
node_patch_denied "labels a Node outside tarema.io/{cpu,mem,io,group}" "only the Node labels" \
  '{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}'
node_patch_denied "removes a Node label not its own" "only the Node labels" \
  '{"metadata":{"labels":{"kubernetes.io/hostname":null}}}'
node_patch_denied "changes tarema.io/machine-type (not a profiler label)" "only the Node labels" \
  '{"metadata":{"labels":{"tarema.io/machine-type":"x"}}}'
node_patch_denied "sets a Node annotation not its own" "only the Node annotation" '{"metadata":{"annotations":{"x":"y"}}}'
node_patch_denied "taints a Node" "does not change a Node's spec" \
  '{"spec":{"taints":[{"key":"x","value":"y","effect":"NoSchedule"}]}}'
node_patch_denied "cordons a Node" "does not change a Node's spec" '{"spec":{"unschedulable":true}}'
node_patch_denied "puts a finalizer on a Node" "finalizers or owners" '{"metadata":{"finalizers":["x.io/block"]}}'
cpu_label=$(kubectl get node "$NODE1" -o jsonpath='{.metadata.labels.tarema\.io/cpu}')
out=$(node_patch '{"metadata":{"labels":{"tarema.io/cpu":"probe"}}}') && [[ $out == "200 "* ]] &&
  pass "profiler may still set its own tarema.io labels" || fail "profiler may set its tarema.io labels" "$out"
kubectl label node "$NODE1" tarema.io/cpu="$cpu_label" --overwrite >/dev/null
# Undo whatever a refused patch above would have done, had it been let through.
kubectl patch node "$NODE1" --type merge -p '{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":null,"kubernetes.io/hostname":"'"$NODE1"'","tarema.io/machine-type":"'"$mt_label"'"},"annotations":{"x":null},"finalizers":null},"spec":{"taints":null,"unschedulable":null}}' >/dev/null

# ------------------------------------------------------------------ labeler
WF=deploy-e2e-$$
if [ -n "${DATABASE_URL:-}" ]; then
  check "labeler ingest of a trace (PostgreSQL from DATABASE_URL)" \
    "$BIN/tarema-labeler" ingest --workflow "$WF" "$REPO_ROOT/tests/fixtures/labeler/chipseq_trace_human.txt"
  "$BIN/tarema-labeler" serve --kubeconfig "$KC_LAB" --namespace "$NS" --bind 127.0.0.1 --port 0 \
    --spool "$WORK/spool" --log-level info --log-format text >"$WORK/lab.log" 2>&1 &
  PIDS+=("$!")
  labelled() {
    kubectl -n "$NS" get taskprofiles -o json |
      jq -e --arg wf "$WF" '[.items[] | select(.spec.workflow == $wf and .status.labels.cpu != null)] | length > 0'
  }
  if wait_for 40 labelled; then
    pass "labeler (own token) published TaskProfiles with labels: $(kubectl -n "$NS" get taskprofiles -o name | wc -l)"
  else
    fail "labeler (own token) published TaskProfiles" "$(tail -n 15 "$WORK/lab.log")"
  fi
  grep -qi 'forbidden' "$WORK/lab.log" && fail "labeler log has no Forbidden" "$(grep -i forbidden "$WORK/lab.log" | head -3)" ||
    pass "labeler log has no Forbidden"
else
  fail "labeler publishes TaskProfiles" "DATABASE_URL is not set: run through tests/run.sh e2e"
fi
denied "labeler deletes a pod" "$KC_LAB" -n "$NS" delete pod victim
denied "labeler reads Secrets" "$KC_LAB" -n "$NS" get secrets
denied "labeler patches a Node" "$KC_LAB" label node "$NODE1" tarema.io/x=1
denied "labeler deletes a TaskProfile" "$KC_LAB" -n "$NS" delete taskprofiles --all
denied "labeler writes TaskProfiles in another namespace" "$KC_LAB" -n default create -f - <<<'{"apiVersion":"tarema.io/v1alpha1","kind":"TaskProfile","metadata":{"name":"x"},"spec":{"workflow":"w","process":"p"}}'

# ------------------------------------------------------------------ scheduler
# The chart's own config file (from the installed ConfigMap), so leader election and every
# key run exactly as deployed; only the API credentials and the listen port differ.
kubectl -n "$NS" get configmap "$REL-scheduler-config" -o jsonpath='{.data.scheduler\.yaml}' >"$WORK/sched.yaml"
"$BIN/tarema-scheduler" run --config "$WORK/sched.yaml" --kubeconfig "$KC_SCHED" --bind-address 127.0.0.1 \
  --port 0 --namespaces "$NS" --identity e2e-local --log-format text >"$WORK/sched.log" 2>&1 &
PIDS+=("$!")
holder() { [ "$(kubectl -n "$NS" get lease tarema-scheduler -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" = e2e-local ]; }
wait_for 30 holder && pass "scheduler (own token) holds Lease $NS/tarema-scheduler" ||
  fail "scheduler holds its Lease" "$(tail -n 15 "$WORK/sched.log")"
kubectl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: task-ok
  # As Nextflow writes it: label values sanitized (':' -> '_'), the workflow as an annotation.
  labels: {nextflow.io/processName: "NFCORE_CHIPSEQ_CHIPSEQ_FASTQC"}
  annotations: {tarema.io/workflow: "$WF"}
spec:
  schedulerName: tarema
  containers: [{name: t, image: busybox, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: task-too-big
spec:
  schedulerName: tarema
  containers: [{name: t, image: busybox, resources: {requests: {cpu: "5000", memory: 1Gi}}}]
YAML
bound() { [ -n "$(kubectl -n "$NS" get pod task-ok -o jsonpath='{.spec.nodeName}')" ]; }
wait_for 30 bound && pass "scheduler (own token) bound a pod to $(kubectl -n "$NS" get pod task-ok -o jsonpath='{.spec.nodeName}')" ||
  fail "scheduler bound a pod" "$(tail -n 15 "$WORK/sched.log")"
unsched() { [ "$(kubectl -n "$NS" get pod task-too-big -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]; }
wait_for 30 unsched && pass "scheduler patched pods/status: PodScheduled=False Unschedulable" ||
  fail "scheduler patched pods/status" "$(kubectl -n "$NS" get pod task-too-big -o jsonpath='{.status}') $(tail -n 5 "$WORK/sched.log")"
events() { kubectl -n "$NS" get events.events.k8s.io -o json | jq -e '[.items[] | select(.reportingController != null and (.reason == "Scheduled" or .reason == "FailedScheduling"))] | map(.reason) | unique | length == 2'; }
wait_for 20 events && pass "scheduler recorded Scheduled and FailedScheduling events (events.k8s.io)" ||
  fail "scheduler recorded events" "$(kubectl -n "$NS" get events 2>&1 | tail -5)"
# Preemption under the scheduler's own token (RBAC: pods delete; the pod-status admission policy:
# nominatedNodeName and DisruptionTarget): on a 2-core node of its own, a high-priority pod
# evicts the low-priority pod filling it, and lands.
cat >"$WORK/pre-node.yaml" <<NODES
nodes:
  - {prefix: pre$$n, count: 1, cpu: 2, memory: 4Gi, pods: 110, labels: {tarema.io/e2e-pre: "$$"},
     taints: [{key: tarema.io/e2e-pre, value: "$$", effect: NoSchedule}]}
NODES
bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/pre-node.yaml" >/dev/null 2>&1
PRE_NODE=$(kubectl get nodes -l "tarema.io/e2e-pre=$$" -o jsonpath='{.items[0].metadata.name}')
kubectl apply -f - >/dev/null <<YAML
{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "$NS-low"}, "value": 10}
---
{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "$NS-high"}, "value": 1000}
---
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pre-low", "namespace": "$NS"},
 "spec": {"nodeName": "$PRE_NODE", "priorityClassName": "$NS-low",
  "tolerations": [{"key": "tarema.io/e2e-pre", "operator": "Exists", "effect": "NoSchedule"}],
  "containers": [{"name": "t", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}]}}
---
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pre-high", "namespace": "$NS"},
 "spec": {"schedulerName": "tarema", "priorityClassName": "$NS-high",
  "nodeSelector": {"tarema.io/e2e-pre": "$$"},
  "tolerations": [{"key": "tarema.io/e2e-pre", "operator": "Exists", "effect": "NoSchedule"}],
  "containers": [{"name": "t", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}]}}
YAML
pre_landed() {
  [ -n "$PRE_NODE" ] && [ "$(kubectl -n "$NS" get pod pre-high -o jsonpath='{.spec.nodeName}')" = "$PRE_NODE" ] &&
    ! kubectl -n "$NS" get pod pre-low >/dev/null 2>&1 &&
    kubectl -n "$NS" get events.events.k8s.io -o json |
    jq -e '[.items[] | select(.reason == "Preempted" and .regarding.name == "pre-low" and .related.name == "pre-high")] | length == 1' >/dev/null
}
wait_for 60 pre_landed && pass "scheduler (own token) preempts: low-priority pod evicted (Preempted event), the high-priority one bound" ||
  fail "scheduler preempts under its own token" "node '$PRE_NODE'; $(kubectl -n "$NS" get pods pre-low pre-high -o wide 2>&1 | tail -n +2); $(grep -i 'preempt' "$WORK/sched.log" | tail -n 5)"
grep -qi 'forbidden\|status=403' "$WORK/sched.log" && fail "scheduler log has no Forbidden" "$(grep -i 'forbidden\|status=403' "$WORK/sched.log" | head -3)" ||
  pass "scheduler log has no Forbidden"
denied "scheduler evicts a pod through the Eviction API" "$KC_SCHED" create --raw "/api/v1/namespaces/$NS/pods/victim/eviction" -f - <<<"{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"victim\",\"namespace\":\"$NS\"}}"
denied "scheduler updates a pod" "$KC_SCHED" -n "$NS" label pod victim x=1
# pods patch is granted for backfill's annotation only (the chart's admission policy)
# (a bare PATCH, as the scheduler sends it: it may not even get a pod, which kubectl would)
out=$(api_patch "$KC_SCHED" "/api/v1/namespaces/$NS/pods/victim" merge \
  '{"metadata":{"annotations":{"tarema.io/expected-start":"2026-01-01T00:00:00Z"}}}')
if [[ $out == "200 "* ]]; then
  pass "scheduler sets a pod's tarema.io/expected-start annotation (backfill)"
else
  fail "scheduler sets a pod's tarema.io/expected-start annotation (backfill)" "$out"
fi
out=$(api_patch "$KC_SCHED" "/api/v1/namespaces/$NS/pods/victim" merge \
  '{"metadata":{"annotations":{"tarema.io/extender-retry":"2026-01-01T00:00:00.000Z"}}}')
if [[ $out == "200 "* ]]; then
  pass "scheduler sets a pod's tarema.io/extender-retry annotation (extender's retry)"
else
  fail "scheduler sets a pod's tarema.io/extender-retry annotation (extender's retry)" "$out"
fi
# the rest of a pod is refused by the admission policy (RBAC alone would let the patch through)
pod_patch_denied() { # NAME PATCH
  local out
  out=$(api_patch "$KC_SCHED" "/api/v1/namespaces/$NS/pods/victim" merge "$2")
  [[ $out == "403 "*"ValidatingAdmissionPolicy"*"tarema.io/expected-start and tarema.io/extender-retry annotations only"* ]] &&
    pass "denied: scheduler $1 (admission policy)" ||
    fail "denied: scheduler $1 (admission policy)" "not refused by that rule: $out"
}
pod_patch_denied "sets another annotation on a pod" '{"metadata":{"annotations":{"x":"1"}}}'
pod_patch_denied "relabels a pod" '{"metadata":{"labels":{"x":"1"}}}'
pod_patch_denied "changes a pod's spec" '{"spec":{"activeDeadlineSeconds":5}}'
denied "scheduler reads Secrets" "$KC_SCHED" -n "$NS" get secrets
denied "scheduler patches a Node" "$KC_SCHED" label node "$NODE1" tarema.io/x=1
denied "scheduler creates pods" "$KC_SCHED" -n "$NS" run x --image=busybox --restart=Never
denied "scheduler updates another Lease" "$KC_SCHED" -n "$NS" annotate lease tarema-scheduler-other x=1 --overwrite
cani "$SA_SCHED" update leases/tarema-scheduler -n "$NS" && ! cani "$SA_SCHED" update leases/other -n "$NS" &&
  ! cani "$SA_SCHED" create leases -n default && pass "can-i: scheduler updates only its own Lease, only in $NS" ||
  fail "can-i: scheduler Lease access limited"
! cani "$SA_SCHED" get secrets -A && ! cani "$SA_LAB" get secrets -A && ! cani "$SA_PROF" get secrets -A &&
  ! cani "$SA_BENCH" get secrets -A && pass "can-i: no component ServiceAccount can read Secrets anywhere" ||
  fail "can-i: no component can read Secrets"

# The audit: every right each ServiceAccount holds in the release namespace (cluster-wide ones
# included), as `kubectl auth can-i --list` reports it, equals the list docs/operations.md
# ("Security: RBAC per component") explains verb by verb; the self-review and discovery rights
# every authenticated user has are left out.
rights() {
  kubectl auth can-i --list --as="system:serviceaccount:$NS:$1" -n "$NS" |
    awk 'NR > 1 && $1 !~ /^\[/ && $1 !~ /^selfsubject/ { o = $1; for (i = 3; i <= NF; i++) o = o " " $i; print o }' | sort
}
# What every ServiceAccount may do without any binding of ours (the cluster's defaults for all
# authenticated users: 1.37 lets them read clustertrustbundles, 1.35 does not): an account no
# binding names (impersonated; it need not exist). The audit is of what our bindings add.
BASELINE=$(rights tarema-no-binding)
audit() { # audit SA EXPECTED
  local got
  got=$(comm -23 <(rights "$1") <(printf '%s\n' "$BASELINE"))
  [ "$got" = "$(sort <<<"$2")" ] && pass "can-i --list: $1 has exactly the documented rights" ||
    fail "can-i --list: $1 has exactly the documented rights" "got: $(tr '\n' ';' <<<"$got") want: $(sort <<<"$2" | tr '\n' ';')"
}
audit "$SA_SCHED" "events.events.k8s.io [] [create]
leases.coordination.k8s.io [] [create]
leases.coordination.k8s.io [tarema-scheduler] [get update]
nodes [] [list watch]
csinodes.storage.k8s.io [] [list watch]
persistentvolumeclaims [] [list watch patch]
persistentvolumes [] [list watch patch]
poddisruptionbudgets.policy [] [list watch]
pods [] [list watch delete patch]
replicasets.apps [] [list watch]
replicationcontrollers [] [list watch]
services [] [list watch]
statefulsets.apps [] [list watch]
pods/binding [] [create]
pods/status [] [patch]
podgroups.scheduling.k8s.io [] [get list watch patch]
podgroups.scheduling.k8s.io/status [] [patch]
podgroups.scheduling.x-k8s.io [] [get list watch patch]
podgroups.scheduling.x-k8s.io/status [] [patch]
reservations.tarema.io [] [get list watch]
reservations.tarema.io/status [] [patch]
priorityclasses.scheduling.k8s.io [] [list watch]
storageclasses.storage.k8s.io [] [list watch]
taskprofiles.tarema.io [] [list watch]
workloads.scheduling.k8s.io [] [get list watch]"
audit "$SA_LAB" "nodes [] [list watch]
pods [] [list watch patch]
taskprofiles.tarema.io [] [create]
taskprofiles.tarema.io/status [] [patch]"
audit "$SA_PROF" "configmaps [] [list delete]
jobs.batch [] [create get delete]
nodes [] [list patch]"
audit "$SA_BENCH" "configmaps [] [create update]"
# pods/status is granted for the PodScheduled condition (checked working above); the admission
# policy refuses every other change by the scheduler's token (status patches, no read first).
status_patch_denied() { # status_patch_denied WHAT JSON WHY (a JSON merge patch: lists replaced)
  local out
  out=$(api_patch "$KC_SCHED" "/api/v1/namespaces/$NS/pods/task-ok/status" merge "$2")
  [[ $out == "403 "*"ValidatingAdmissionPolicy"*"$3"* ]] && pass "denied: scheduler $1" ||
    fail "denied: scheduler $1" "not refused by the rule '$3': $out"
}
status_patch_denied "marks a running pod not Ready" \
  '{"status":{"conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False"}]}}' \
  "only a pod's PodScheduled and DisruptionTarget conditions"
# (a strategic merge patch, merged by condition type, as preemption sends it: the other
# conditions stay, so only the reason decides)
out=$(api_patch "$KC_SCHED" "/api/v1/namespaces/$NS/pods/task-ok/status" strategic-merge \
  '{"status":{"conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI"}]}}')
[[ $out == "403 "*"ValidatingAdmissionPolicy"*"DisruptionTarget only with reason PreemptionByScheduler"* ]] &&
  pass "denied: scheduler marks a pod DisruptionTarget for another reason than its preemption" ||
  fail "denied: scheduler marks a pod DisruptionTarget for another reason than its preemption" "not refused by that rule: $out"
status_patch_denied "fails a pod (phase)" '{"status":{"phase":"Failed"}}' "no pod status field but"
status_patch_denied "sets a pod's IP" '{"status":{"podIP":"10.9.9.9","podIPs":[{"ip":"10.9.9.9"}]}}' \
  "no pod status field but"
status_patch_denied "relabels a pod through its status" '{"metadata":{"labels":{"app":"x"}}}' "no pod status field but"

# ------------------------------------------------------------------ extender wiring
# The chart's extender ConfigMap drives a real kube-scheduler; tarema (extender mode, under
# its ServiceAccount token) answers filter/prioritize/bind. Only the Service URL is replaced
# by the local address, since cluster DNS does not exist here.
EXT_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# As deployed: HTTPS, kube-scheduler authenticated by its client certificate (the test PKI of
# tests/fixtures/tls stands in for the chart's Secrets, which only exist inside the cluster).
TLS=$REPO_ROOT/tests/fixtures/tls
# (--leader-elect=false: the same config names the Lease the scheduler-mode process above holds;
# a chart release runs one mode, never both)
"$BIN/tarema-scheduler" run --config "$WORK/sched.yaml" --mode extender --extender-bind --kubeconfig "$KC_SCHED" \
  --leader-elect=false --bind-address 127.0.0.1 --port "$EXT_PORT" --namespaces "$NS" --log-format text --log-level debug \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" --client-ca-file "$TLS/ca.crt" >"$WORK/ext.log" 2>&1 &
PIDS+=("$!")
helm template "$REL" "$CHART" -n "$NS" "${SETS[@]}" --set scheduler.mode=extender --set extender.enabled=true \
  --set extender.bind=true -s templates/extender-configmap.yaml >"$WORK/ext-cm.yaml"
python3 - "$WORK/ext-cm.yaml" "$WORK/kube-sched.yaml" "$EXT_PORT" "${TAREMA_CLUSTER_DIR:-}" "$KUBECONFIG" "$TLS" <<'PY'
import sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
c = yaml.safe_load(cm["data"]["kube-scheduler-config.yaml"])
e = c["extenders"][0]
assert e["urlPrefix"].startswith("https://") and e["urlPrefix"].endswith(".svc:10260"), e["urlPrefix"]
assert e["enableHTTPS"] is True and set(e["tlsConfig"]) == {"certFile", "keyFile", "caFile"}, e
assert e.get("preemptVerb") == "preempt", e
e["urlPrefix"] = "https://127.0.0.1:%s" % sys.argv[3]
e["tlsConfig"] = {"certFile": sys.argv[6] + "/client.crt", "keyFile": sys.argv[6] + "/client.key",
                  "caFile": sys.argv[6] + "/ca.crt"}
c["clientConnection"] = {"kubeconfig": sys.argv[5]}
c["leaderElection"]["leaderElect"] = False
yaml.safe_dump(c, open(sys.argv[2], "w"))
PY
kube-scheduler --config "$WORK/kube-sched.yaml" --secure-port 0 --authentication-kubeconfig "$KUBECONFIG" \
  --authorization-kubeconfig "$KUBECONFIG" >"$WORK/kube-sched.log" 2>&1 &
KS_PID=$!
PIDS+=("$KS_PID")
kubectl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: task-ext
  labels: {nextflow.io/processName: "FASTQC"}
  annotations: {tarema.io/workflow: "$WF"}
spec:
  schedulerName: tarema-extender
  containers: [{name: t, image: busybox, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
YAML
ext_bound() { [ -n "$(kubectl -n "$NS" get pod task-ext -o jsonpath='{.spec.nodeName}')" ]; }
if wait_for 40 ext_bound; then
  pass "extender ConfigMap: kube-scheduler profile tarema-extender bound a pod via tarema"
else
  fail "extender ConfigMap: pod bound via tarema" "kube-scheduler: $(grep -iE 'error|extender' "$WORK/kube-sched.log" | tail -n 5) tarema: $(tail -n 5 "$WORK/ext.log")"
fi
for verb in filter prioritize bind; do
  grep -q "path=/$verb status=200 .*auth=client-cert" "$WORK/ext.log" && pass "kube-scheduler called tarema's /$verb (200, mTLS)" ||
    fail "kube-scheduler called tarema's /$verb" "$(grep 'http request' "$WORK/ext.log" | tail -n 5)"
done
grep -qi 'forbidden\|status=403' "$WORK/ext.log" && fail "extender log has no Forbidden" "$(grep -i forbidden "$WORK/ext.log" | head -3)" ||
  pass "extender log has no Forbidden"

# ------------------------------------------------------------------ uninstall
check "helm uninstall" helm uninstall "$REL" -n "$NS"
gone() { ! kubectl get clusterrole "$REL-scheduler" >/dev/null 2>&1; }
wait_for 20 gone && pass "uninstall removed the ClusterRoles" || fail "uninstall removed the ClusterRoles"
summary
