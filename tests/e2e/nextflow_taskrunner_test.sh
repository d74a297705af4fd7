#!/usr/bin/env bash
# nextflow_taskrunner_test.sh: hack/taskrunner.py, the stand-in for a kubelet and a container
# runtime that the real-Nextflow test needs, on its own, with plain pods bound to a kwok node:
# a pod's command runs on this machine in its working directory and the pod ends Succeeded or
# Failed with the process's exit code (and stays so: kwok does not overwrite it); at most
# --concurrency pods run at once; a pod deleted while running has its process killed; a volume
# the runner cannot provide fails the pod with a message; pods kwok plays
# (tarema.io/duration) and pods of other namespaces are left alone.
# Needs KUBECONFIG (tests/run.sh e2e provides it).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"

ID=$(printf '%05d' $((RANDOM % 100000)))
ns=taskrunner-$ID
other=taskrunner-other-$ID
node=tr$ID-1
work=$(mktemp -d)
chmod 755 "$work"
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  # No volume protection controller runs locally: drop the finalizers it would remove, or the
  # claims, volumes and namespace stay forever.
  kubectl -n "$ns" patch pvc work moved --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kubectl patch pv "tr-ok-$ID" "tr-moved-$ID" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  kubectl delete namespace "$ns" "$other" --wait=false >/dev/null 2>&1
  kubectl delete pv "tr-ok-$ID" "tr-moved-$ID" --wait=false >/dev/null 2>&1
  kubectl delete node "$node" --wait=false >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/nodes.yaml" <<EOF
nodes:
  - {prefix: tr$ID, count: 1, cpu: 8, memory: 8Gi, pods: 50,
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "a kwok node for the test" bash hack/cluster.sh nodes "$work/nodes.yaml"
kubectl create namespace "$ns" >/dev/null && kubectl create namespace "$other" >/dev/null

# Two hostPath volumes pre-bound to claims: one at the path it is mounted at, one not.
mkdir -p "$work/vol" "$work/elsewhere"
volume() { # PV CLAIM HOSTPATH
  jq -cn --arg pv "$1" --arg c "$2" --arg ns "$ns" --arg p "$3" '
    {apiVersion: "v1", kind: "PersistentVolume", metadata: {name: $pv},
     spec: {capacity: {storage: "1Gi"}, accessModes: ["ReadWriteMany"], storageClassName: "",
            persistentVolumeReclaimPolicy: "Retain", hostPath: {path: $p},
            claimRef: {namespace: $ns, name: $c}}}'
  jq -cn --arg pv "$1" --arg c "$2" --arg ns "$ns" '
    {apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: {namespace: $ns, name: $c},
     spec: {accessModes: ["ReadWriteMany"], storageClassName: "", volumeName: $pv,
            resources: {requests: {storage: "1Gi"}}}}'
}
{ volume "tr-ok-$ID" work "$work/vol"; volume "tr-moved-$ID" moved "$work/elsewhere"; } | kubectl create -f - >/dev/null

# pod NAME SCRIPT [CLAIM] [ANNOTATIONS_JSON] [NAMESPACE]: a pod bound to the test node running
# `sh -c SCRIPT` in $work/vol, the claim mounted there.
pod() {
  jq -cn --arg ns "${5:-$ns}" --arg n "$1" --arg s "$2" --arg node "$node" --arg dir "$work/vol" \
    --arg claim "${3:-work}" --argjson ann "${4:-{\}}" --arg id "$ID" '
    {apiVersion: "v1", kind: "Pod", metadata: {namespace: $ns, name: $n, annotations: $ann},
     spec: {nodeName: $node, restartPolicy: "Never",
            tolerations: [{key: "tarema.io/e2e", operator: "Equal", value: $id, effect: "NoSchedule"}],
            volumes: [{name: "w", persistentVolumeClaim: {claimName: $claim}}],
            containers: [{name: "main", image: "debian:12-slim", command: ["/bin/sh", "-c"], args: [$s],
                          workingDir: $dir, env: [{name: "GREETING", value: "hello"}],
                          volumeMounts: [{name: "w", mountPath: $dir}]}]}}'
}
phase() { kubectl -n "${2:-$ns}" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
exit_code() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}'; }
phase_is() { [ "$(phase "$1" "${3:-}")" = "$2" ]; }

python3 hack/taskrunner.py --namespace "$ns" --concurrency 2 --log-dir "$work/logs" >"$work/runner.out" 2>"$work/runner.err" &
pid=$!
if wait_for 20 grep -q '^ready' "$work/runner.out"; then pass "taskrunner starts"; else fail "taskrunner starts" "$(cat "$work/runner.err")"; fi

{
  pod ok 'echo "$GREETING from $(pwd)" > out.txt'
  pod fails 'echo partial > partial.txt; exit 3'
  pod other-ns 'touch other-ran' work '{}' "$other"
  pod kwok-plays 'touch kwok-ran' work '{"tarema.io/duration": "1s"}'
  pod moved 'touch moved-ran' moved
} | kubectl create -f - >/dev/null

if wait_for 30 phase_is ok Succeeded; then pass "a pod whose command exits 0 ends Succeeded"; else fail "pod ok Succeeded" "phase $(phase ok); $(cat "$work/runner.err")"; fi
[ "$(cat "$work/vol/out.txt" 2>/dev/null)" = "hello from $work/vol" ] && pass "its command ran in its working directory with its env" ||
  fail "command ran in its working directory" "out.txt: $(cat "$work/vol/out.txt" 2>&1)"
[ "$(exit_code ok) $(kubectl -n "$ns" get pod ok -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}')" = "0 Completed" ] &&
  pass "container state terminated, exit code 0" || fail "container state terminated 0" "$(kubectl -n "$ns" get pod ok -o jsonpath='{.status}')"
if wait_for 30 phase_is fails Failed; then pass "a pod whose command exits 3 ends Failed"; else fail "pod fails Failed" "phase $(phase fails)"; fi
[ "$(exit_code fails)" = 3 ] && [ -f "$work/vol/partial.txt" ] && pass "with exit code 3" || fail "exit code 3" "$(exit_code fails)"
if wait_for 30 phase_is moved Failed; then pass "a pod whose claim is not where it is mounted fails"; else fail "moved claim fails" "phase $(phase moved)"; fi
msg=$(kubectl -n "$ns" get pod moved -o jsonpath='{.status.containerStatuses[0].state.terminated.message}')
[[ $msg == *"must be the same path"* ]] && [ ! -e "$work/vol/moved-ran" ] && [ ! -e "$work/elsewhere/moved-ran" ] &&
  pass "without running, saying why" || fail "moved claim message" "$msg"
if wait_for 20 phase_is kwok-plays Succeeded; then pass "a tarema.io/duration pod is finished by kwok"; else fail "duration pod" "phase $(phase kwok-plays)"; fi
[ ! -e "$work/vol/kwok-ran" ] && pass "and its command is not run" || fail "duration pod not run" "kwok-ran exists"
sleep 2
[ "$(phase other-ns "$other")" = Running ] && [ ! -e "$work/vol/other-ran" ] && pass "pods of other namespaces are left alone" ||
  fail "other namespace left alone" "phase $(phase other-ns "$other")"
[ "$(phase ok)/$(phase fails)" = "Succeeded/Failed" ] && pass "kwok leaves the completed status alone" ||
  fail "completed status kept" "$(phase ok)/$(phase fails)"
grep -q "^finished $ns/ok node=$node exit=0 " "$work/runner.out" && grep -q "^finished $ns/fails node=$node exit=3 " "$work/runner.out" &&
  pass "a 'finished' line per pod with node and exit code" || fail "finished lines" "$(cat "$work/runner.out")"

# Concurrency: six 1-second pods, at most two at a time.
for i in 1 2 3 4 5 6; do
  pod "c$i" 'echo "s $(date +%s.%N)" >> c.'"$i"'; sleep 1; echo "e $(date +%s.%N)" >> c.'"$i"
done | kubectl create -f - >/dev/null
all_done() { for i in 1 2 3 4 5 6; do phase_is "c$i" Succeeded || return 1; done; }
if wait_for 40 all_done; then pass "six pods all run to completion"; else fail "six pods complete" "$(kubectl -n "$ns" get pods)"; fi
peak=$(cat "$work"/vol/c.[1-6] 2>/dev/null | sort -k2,2n | awk '$1 == "s" {n++} $1 == "e" {n--} n > m {m = n} END {print m + 0}')
[ "$peak" = 2 ] && pass "never more than --concurrency 2 at once (peak $peak)" || fail "concurrency bounded" "peak $peak"

# A pod deleted while its process runs: the process is killed.
pod long 'echo $$ > long.pid; exec sleep 120' | kubectl create -f - >/dev/null
wait_for 20 test -s "$work/vol/long.pid"
lpid=$(cat "$work/vol/long.pid" 2>/dev/null)
kill -0 "$lpid" 2>/dev/null && pass "the long pod's process runs" || fail "long pod runs" "pid '$lpid'"
kubectl -n "$ns" delete pod long --wait=false >/dev/null
gone() { ! kill -0 "$lpid" 2>/dev/null; }
if wait_for 20 gone; then pass "deleting the pod kills its process"; else fail "deleted pod's process killed" "pid $lpid still there"; kill "$lpid" 2>/dev/null; fi

kill "$pid" && wait "$pid" 2>/dev/null
pid=
pass "taskrunner stops on SIGTERM"
summary
