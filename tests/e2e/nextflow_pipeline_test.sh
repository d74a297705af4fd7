#!/usr/bin/env bash
# nextflow_pipeline_test.sh: an unmodified Nextflow (hack/nextflow.sh, from Maven Central) runs
# the DSL2 pipeline of tests/fixtures/nextflow/ through tarema on the paper's 5;4;4;2 cluster,
# with the configuration docs/nextflow.md shows (tests/fixtures/nextflow/nextflow.config and
# k8s.yaml, used as they are; only the storage path is this test's own):
#   - the paper nodes are labelled by `tarema-profiler group` + `apply` from NodeProfiles
#     shaped like the paper's Table IV machines (kwok nodes cannot run a benchmark);
#   - tarema-scheduler, `tarema-labeler serve` and hack/taskrunner.py (which runs each task
#     pod's .command.run on this machine, as a kubelet would in a container) run;
#   - run 1, Nextflow 24.10.0 with the k8s executor: exits 0, every task pod scheduled by
#     tarema and really run, the trace names every task's node (k8s.fetchNodeName);
#   - `tarema-labeler ingest --workflow W --run R trace.txt`: TaskProfiles appear;
#   - run 2: exits 0, and each task pod lands in the node group its TaskProfile predicts
#     (smallest label distance, ties to the most powerful group), checked per pod;
#   - Nextflow 22.10.7 (local executor, built-in weblog) posts to `tarema-labeler serve`:
#     exits 0, and the rows the weblog stored equal those `ingest` stores from its trace.
# Nothing is skipped: without Maven Central (first run) or Java the test fails saying so.
# Needs KUBECONFIG and DATABASE_URL (tests/run.sh e2e provides both).
# e2e-run: alone (tests/run.sh runs it with no other test beside it): namespace nextflow and scheduler tarema shared with sizing_nextflow; relabels the paper nodes
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

FIX=$REPO_ROOT/tests/fixtures/nextflow
W=tarema-e2e/nf-small   # manifest.name and the tarema.io/workflow annotation of nextflow.config
NS=nextflow             # k8s.namespace of nextflow.config, created by k8s.yaml
ID=$SCHED_E2E_ID
TPNS=tarema-nf-$ID      # where the labeler publishes TaskProfiles
CHECK_WF=$W-trace-$ID   # the weblog run's trace, ingested for the comparison
NF_TIMEOUT=${NF_TIMEOUT:-300}
work=$(mktemp -d)
chmod 755 "$work"
serve_pid=
runner_pid=
# The local cluster runs no volume protection controller: the kubernetes.io/pv(c)-protection
# finalizers that admission puts on every claim and volume would keep them, and so the
# namespace, forever. Remove them as that controller would once no pod uses them.
drop_volumes() {
  kubectl -n "$NS" patch pvc nextflow-work --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kubectl patch pv nextflow-work --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kubectl delete pv nextflow-work --wait=false >/dev/null 2>&1
}
cleanup() {
  stop_schedulers
  for p in $runner_pid $serve_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  drop_volumes
  kubectl delete namespace "$NS" "$TPNS" --wait=false >/dev/null 2>&1
  kubectl label nodes -l tarema.io/machine-type tarema.io/cpu- tarema.io/mem- tarema.io/io- tarema.io/group- >/dev/null 2>&1
  kubectl annotate nodes -l tarema.io/machine-type tarema.io/profile- >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow IN ('$W', '$CHECK_WF');
    DELETE FROM weblog_runs WHERE workflow = '$W'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
give_up() { fail "$1" "$2"; summary; exit 1; }

# ---- Nextflow from Maven Central (cached after the first run) --------------------------------
if out=$(bash hack/nextflow.sh install 2>&1); then
  pass "Nextflow $(bash hack/nextflow.sh versions | paste -sd' ') installed from Maven Central (cached)"
else
  give_up "Nextflow installs from Maven Central with hack/nextflow.sh" "$out"
fi
nextflow() { bash "$REPO_ROOT/hack/nextflow.sh" run "$@"; }
# run_nf NAME VERSION ARGS...: runs Nextflow in its own launch directory $work/NAME; output in
# $work/NAME.log; sets NF_RC and NF_RUN (the run name).
run_nf() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  (cd "$work/$name" && NXF_ANSI_LOG=false timeout "$NF_TIMEOUT" bash "$REPO_ROOT/hack/nextflow.sh" run "$@") >"$work/$name.log" 2>&1
  NF_RC=$?
  NF_RUN=$(sed -n 's/^Launching `.*` \[\([a-z_]*\)\].*/\1/p' "$work/$name.log" | head -n 1)
}
nf_failed() { # why Nextflow failed, for the test output
  echo "exit $NF_RC$([ "$NF_RC" = 124 ] && echo " (timed out after $NF_TIMEOUT s)"); $(tail -n 15 "$work/$1.log")"
  grep -E 'ERROR|Caused by|Exception' "$work/$1/.nextflow.log" 2>/dev/null | head -n 5
}

# ---- the paper's cluster, labelled as the profiler labels it --------------------------------
check "the paper's 5;4;4;2 nodes exist" bash hack/cluster.sh nodes tests/fixtures/nodes/paper-5442.yaml
mkdir "$work/profiles"
for n in $(kubectl get nodes -l tarema.io/machine-type -o jsonpath='{.items[*].metadata.name}'); do
  read -r type cores mem < <(kubectl get node "$n" -o jsonpath='{.metadata.labels.tarema\.io/machine-type} {.status.capacity.cpu} {.status.capacity.memory}')
  # Table IV-shaped figures per machine type; the disks differ too, so that the groups differ
  # in every feature: e2/n1 slow CPU and memory but fast disks, c2 the fastest CPU.
  case $type in
    e2 | n1) f="376 13600 930 940 390 410" ;;
    n2) f="470 17750 480 483 102 107" ;;
    c2) f="523 19800 620 625 210 220" ;;
    *) continue ;;
  esac
  set -- $f
  jq -n --arg n "$n" --arg t "$type" --argjson c "$cores" --arg m "$mem" --argjson cpu "$1" --argjson mb "$2" \
    --argjson sr "$3" --argjson sw "$4" --argjson rr "$5" --argjson rw "$6" '
    {node: $n, cores: $c, memory_bytes: (($m | rtrimstr("Gi") | tonumber) * 1073741824),
     cpu_single_eps: $cpu, cpu_multi_eps: ($cpu * $c), mem_mibps: $mb, seq_read_iops: $sr,
     seq_write_iops: $sw, rand_read_iops: $rr, rand_write_iops: $rw, static: {machine_type: $t}}' >"$work/profiles/$n.json"
done
if "$BIN/tarema-profiler" group -o "$work/groups.json" "$work"/profiles/*.json >"$work/groups.txt" 2>&1 &&
  grep -q '^15 nodes, k=3' "$work/groups.txt" && "$BIN/tarema-profiler" apply "$work/groups.json" >>"$work/groups.txt" 2>&1; then
  pass "tarema-profiler groups the paper nodes into 3 groups and labels them"
else
  give_up "tarema-profiler groups and labels the paper nodes" "$(cat "$work/groups.txt")"
fi
# node -> "group cpu mem io", as the scheduler reads them
kubectl get nodes -l tarema.io/group -o json | jq -r '.items[] | .metadata.labels as $l |
  "\(.metadata.name) \($l["tarema.io/group"]) \($l["tarema.io/cpu"]) \($l["tarema.io/mem"]) \($l["tarema.io/io"])"' >"$work/node-groups.txt"

# ---- what a user creates for Nextflow: namespace, ServiceAccount + RBAC, bound claim -------
drop_volumes # an earlier run's
if kubectl get namespace "$NS" >/dev/null 2>&1; then # an earlier run's, maybe still terminating
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  wait_for 60 bash -c "! kubectl get namespace $NS" || give_up "namespace $NS from an earlier run goes away" "$(kubectl get namespace "$NS" -o yaml | tail -5)"
fi
wait_for 30 bash -c "! kubectl get pv nextflow-work" || give_up "volume nextflow-work from an earlier run goes away" "$(kubectl get pv nextflow-work -o yaml | tail -5)"
mkdir -p "$work/storage"
# The only change to k8s.yaml: the volume's host path is this test's storage directory.
sed "s#path: /workspace\$#path: $work/storage#" "$FIX/k8s.yaml" >"$work/k8s.yaml"
check "k8s.yaml applies (namespace, ServiceAccount, Role, RoleBinding, PV, PVC)" kubectl apply -f "$work/k8s.yaml"
# Nextflow talks to the API server as its ServiceAccount, so the Role is what it gets.
token=$(kubectl -n "$NS" create token nextflow --duration=1h 2>&1) || give_up "a token for ServiceAccount nextflow" "$token"
kubectl config view --raw --minify -o json | jq --arg t "$token" --arg ns "$NS" '
  .users = [{name: "nextflow", user: {token: $t}}] | .contexts[0].context.user = "nextflow" |
  .contexts[0].context.namespace = $ns' >"$work/nextflow.kubeconfig"
can=$(KUBECONFIG=$work/nextflow.kubeconfig kubectl auth can-i create pods 2>&1)
[ "$can" = yes ] && pass "ServiceAccount nextflow may create pods in $NS" || fail "ServiceAccount may create pods" "$can"

# ---- tarema and the task runner ---------------------------------------------------------------
check "TaskProfile CRD applies" apply_shared -f manifests/crds/taskprofile.yaml
check "CRD established" kubectl wait --for=condition=Established --timeout=30s crd/taskprofiles.tarema.io
kubectl create namespace "$TPNS" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
# The weblog URL's credentials, if this labeler has weblog authentication: one variable.
auth_args=()
weblog_auth=
if "$BIN/tarema-labeler" --help 2>&1 | qgrep -- --auth-token-file; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
  auth_args=(--auth-token-file "$work/token")
  weblog_auth="?token=$(cat "$work/token")"
fi
"$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$port" --spool "$work/spool" --namespace "$TPNS" \
  --node-selector tarema.io/machine-type "${auth_args[@]}" >"$work/serve.log" 2>&1 &
serve_pid=$!
wait_for 30 curl -sf "$url/readyz" && wait_for 20 grep -q 'node groups known groups=3' "$work/serve.log" &&
  pass "tarema-labeler serve is ready and sees the 3 node groups" || give_up "tarema-labeler serve ready" "$(tail -5 "$work/serve.log")"
start_scheduler "$work/sched.log" --namespaces "$NS" && pass "tarema-scheduler is ready (schedulerName tarema, namespace $NS)" ||
  give_up "tarema-scheduler starts" "$(tail -5 "$work/sched.log")"
python3 hack/taskrunner.py --namespace "$NS" --concurrency 2 --log-dir "$work/pod-logs" >"$work/runner.out" 2>"$work/runner.err" &
runner_pid=$!
wait_for 20 grep -q '^ready' "$work/runner.out" && pass "hack/taskrunner.py runs the pods of $NS" || give_up "taskrunner starts" "$(cat "$work/runner.err")"

# trace_rows FILE: the trace as JSON rows keyed by its header.
trace_rows() { jq -R -s 'split("\n") | map(select(. != "") | split("\t")) | .[0] as $h | .[1:] | map([$h, .] | transpose | map({(.[0]): .[1]}) | add)' "$1"; }

# ---- run 1: the k8s executor, nothing known about the tasks yet -------------------------------
run_nf run1 24.10.0 run "$FIX/main.nf" --storage "$work/storage" -with-trace "$work/run1.txt"
[ "$NF_RC" = 0 ] && pass "run 1 (Nextflow 24.10.0, k8s executor) exits 0: run $NF_RUN" || give_up "run 1 exits 0" "$(nf_failed run1)"
RUN1=$NF_RUN
trace_rows "$work/run1.txt" >"$work/run1.json"
n=$(jq '[.[] | select(.status == "COMPLETED")] | length' "$work/run1.json")
[ "$n" = 12 ] && pass "run 1: 12 tasks completed (4 processes x 3 samples)" || fail "run 1: 12 tasks completed" "$n: $(cat "$work/run1.txt")"
bad=$(jq -r --rawfile nodes "$work/node-groups.txt" '($nodes | split("\n") | map(split(" ")[0])) as $known |
  .[] | select(.hostname as $h | $known | index($h) | not) | "\(.name): hostname \(.hostname)"' "$work/run1.json")
[ -z "$bad" ] && pass "run 1: the trace names each task's node (k8s.fetchNodeName)" || fail "run 1 trace hostname" "$bad"
ran=$(grep -c "^finished $NS/nf-.* exit=0 " "$work/runner.out")
[ "$ran" = 12 ] && pass "run 1: the task runner ran all 12 task pods, exit 0" || fail "run 1 pods ran" "$ran; $(tail -3 "$work/runner.err")"
# The Scheduled events tarema posted (the pods themselves are gone: Nextflow deletes them).
kubectl get events.events.k8s.io -n "$NS" -o json | jq -r '.items[] | select(.reason == "Scheduled" and
  .reportingController == "tarema") | .regarding.name' | sort -u >"$work/scheduled.txt"
unsched=$(jq -r '.[] | .native_id' "$work/run1.json" | grep -vxFf "$work/scheduled.txt")
[ -z "$unsched" ] && pass "run 1: every task pod was bound by tarema-scheduler" || fail "run 1 pods bound by tarema" "no Scheduled event from tarema: $unsched"

# ---- ingest the trace: TaskProfiles appear ---------------------------------------------------
out=$("$BIN/tarema-labeler" ingest --workflow "$W" --run "$RUN1" "$work/run1.txt" 2>&1)
[[ $out == *"stored 12 task runs"* ]] && pass "ingest stores run 1's 12 tasks" || fail "ingest run 1" "$out"
profiles() { kubectl -n "$TPNS" get taskprofiles -o json | jq -c --arg w "$W" '[.items[] | select(.spec.workflow == $w) |
  {process: .spec.process, runs: .status.runs, labels: .status.labels}] | sort_by(.process)'; }
four_profiles() { [ "$(profiles | jq '[.[] | select(.runs == 3 and .labels.cpu > 0)] | length')" = 4 ]; }
if wait_for 30 four_profiles; then pass "TaskProfiles appear for the 4 processes, 3 runs each"; else
  give_up "TaskProfiles appear" "$(profiles) $(tail -3 "$work/serve.log")"; fi
profiles >"$work/profiles.json"
echo "    TaskProfiles: $(jq -c 'map({(.process): .labels}) | add' "$work/profiles.json")"

# ---- run 2: each pod in the group its TaskProfile predicts -----------------------------------
run_nf run2 24.10.0 run "$FIX/main.nf" --storage "$work/storage" -with-trace "$work/run2.txt"
[ "$NF_RC" = 0 ] && pass "run 2 exits 0: run $NF_RUN" || give_up "run 2 exits 0" "$(nf_failed run2)"
trace_rows "$work/run2.txt" >"$work/run2.json"
# Per task pod: the groups tarema must prefer (labels of the node groups vs the TaskProfile's:
# smallest sum of |differences|, ties to the largest label sum; equal ones all count), the
# group of the node the trace names, and the node the task runner ran the pod on.
python3 - "$work/run2.json" "$work/profiles.json" "$work/node-groups.txt" "$work/runner.out" "$NS" >"$work/placement.txt" <<'EOF'
import json, re, sys
rows, profiles = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
nodes = {}
for line in open(sys.argv[3]):
    if line.strip():
        n, g, *labels = line.split()
        nodes[n] = (g, tuple(int(x) for x in labels))
groups = {g: labels for g, labels in nodes.values()}
ran = dict(re.findall(r"^finished %s/(\S+) node=(\S+) exit=0 " % re.escape(sys.argv[5]), open(sys.argv[4]).read(), re.M))
labels = {p["process"]: (p["labels"]["cpu"], p["labels"]["mem"], p["labels"]["io"]) for p in profiles}
for r in rows:
    t = labels.get(r["process"])
    if t is None:
        print("FAIL %s: no TaskProfile for %s" % (r["native_id"], r["process"])); continue
    key = {g: (-sum(abs(a - b) for a, b in zip(gl, t)), sum(gl)) for g, gl in groups.items()}
    best = max(key.values())
    want = sorted(g for g, k in key.items() if k == best)
    node = r["hostname"]
    got = nodes.get(node, ("?",))[0]
    ok = got in want and ran.get(r["native_id"]) == node
    print("%s %s %s labels %s -> group %s; pod on %s (group %s, runner ran it on %s)" % (
        "ok" if ok else "FAIL", r["native_id"], r["name"], t, "/".join(want), node, got, ran.get(r["native_id"], "-")))
print("PREDICTED %d" % len({g for r in rows if r["process"] in labels
    for g in [max(groups, key=lambda g: (-sum(abs(a - b) for a, b in zip(groups[g], labels[r["process"]])), sum(groups[g])))]}))
EOF
n=0
while read -r verdict rest; do
  case $verdict in
    ok) pass "run 2: $rest"; n=$((n + 1)) ;;
    FAIL) fail "run 2: pod in its predicted group" "$rest" ;;
    PREDICTED) distinct=$rest ;;
  esac
done <"$work/placement.txt"
[ "$n" = 12 ] && pass "run 2: all 12 task pods in their predicted groups" || fail "run 2: 12 pods checked" "$n ok; $(cat "$work/placement.txt")"
[ "${distinct:-0}" -ge 2 ] && pass "run 2: the processes were predicted into $distinct different groups" ||
  fail "run 2: predictions differ between processes" "$(cat "$work/placement.txt")"

# ---- the weblog: Nextflow 22.10.7, local executor --------------------------------------------
run_nf weblog 22.10.7 run "$FIX/main.nf" -c "$FIX/weblog.config" --storage "$work/weblog-storage" \
  -with-trace "$work/weblog-trace.txt" -with-weblog "$url/weblog$weblog_auth"
[ "$NF_RC" = 0 ] && pass "weblog run (Nextflow 22.10.7, local executor, -with-weblog) exits 0: run $NF_RUN" ||
  give_up "weblog run exits 0" "$(nf_failed weblog)"
RUN3=$NF_RUN
weblog_rows() { psql "$DATABASE_URL" -Atc "SELECT count(*) FROM task_runs WHERE workflow = '$W' AND run_name = '$RUN3' AND source = 'weblog'"; }
twelve() { [ "$(weblog_rows)" = 12 ]; }
if wait_for 30 twelve; then pass "the weblog stored 12 tasks under workflow $W (manifest.name)"; else
  fail "weblog stored 12 tasks" "$(weblog_rows) rows; $(tail -5 "$work/serve.log")"; fi
out=$("$BIN/tarema-labeler" ingest --workflow "$CHECK_WF" --run "$RUN3" "$work/weblog-trace.txt" 2>&1)
[[ $out == *"stored 12 task runs"* ]] && pass "the same run's trace ingests 12 tasks" || fail "ingest weblog run's trace" "$out"
cols="run_name, task_key, attempt, process, task_name, hash, task_id, status, exit_code, node, cpus, memory_bytes,
  cpu_pct, peak_rss, rchar, wchar, read_bytes, write_bytes, realtime_ms, submit_time, start_time, complete_time"
diff=$(psql "$DATABASE_URL" -Atc "
  (SELECT 'weblog only', $cols FROM task_runs WHERE workflow = '$W' AND run_name = '$RUN3'
   EXCEPT SELECT 'weblog only', $cols FROM task_runs WHERE workflow = '$CHECK_WF')
  UNION ALL
  (SELECT 'trace only', $cols FROM task_runs WHERE workflow = '$CHECK_WF'
   EXCEPT SELECT 'trace only', $cols FROM task_runs WHERE workflow = '$W' AND run_name = '$RUN3')" 2>&1)
[ -z "$diff" ] && pass "the weblog stored exactly the rows the trace gives (every stored column)" ||
  fail "weblog rows equal trace rows" "$diff"
metrics=$(psql "$DATABASE_URL" -Atc "SELECT count(*) FROM task_runs WHERE workflow = '$W' AND run_name = '$RUN3'
  AND cpu_pct IS NOT NULL AND peak_rss IS NOT NULL AND rchar IS NOT NULL AND wchar IS NOT NULL")
[ "$metrics" = 12 ] && pass "with the trace on, weblog events carry %cpu, peak_rss, rchar and wchar" ||
  fail "weblog metrics present" "$metrics of 12 rows"
summary
