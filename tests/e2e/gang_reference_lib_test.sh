#!/usr/bin/env bash
# tests/e2e/gang_reference_lib_test.sh: the gang helpers of tests/e2e/gang_lib.sh, which the gang
# e2e tests, the kube-scheduler reference and bench/gang_bench.sh rely on to judge
# all-or-nothing, so a wrong count there would hide a partial gang everywhere:
#  1. counting, on crafted states (no API): gangs by PodGroup label and by workloadRef (with a
#     replica key), basic Workload groups left out, a missing group object reported with min 0;
#  2. the verdict of the all-or-nothing monitor on crafted sample files: a transient partial
#     state (binds in flight) passes, one lasting the grace period or left at the end fails,
#     too few samples is "did not run";
#  3. on the API: a Workload gang and its pods as the builders make them are accepted, the
#     pods keep their workloadRef, counting works on a namespace of many pods, and a monitor running while a pod is bound by hand sees the
#     partial gang (no scheduler involved: the test binds through pods/binding itself).
# e2e-run: alone (tests/run.sh runs it with no other test beside it): binds a pod to the first node of the list, which may be another test's
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gang_lib.sh"
WORK=$(mktemp -d)
NS=e2e-ganglib-$$-$RANDOM
cleanup() {
  [ -n "${GANG_MON_PID:-}" ] && { touch "$GANG_MON_FILE.stop"; wait "$GANG_MON_PID" 2>/dev/null; }
  [ -n "${KUBECONFIG:-}" ] && kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---- 1. counting on crafted states
# bind NAMES...: a jq filter setting spec.nodeName on the named pods
bind() { jq -c --args 'if (.metadata.name | IN($ARGS.positional[])) then .spec.nodeName = "n-1" else . end' "$@"; }
{
  gang_pods_json workload ns a 1 3 s | bind a-1
  gang_pods_json podgroup ns b 1 4 s | bind b-1 b-2 b-3
  gang_pods_json workload ns c 1 2 s | bind c-1
  gang_pods_json workload ns d 1 2 s
  gang_pods_json workload ns r 1 2 s | jq -c '.spec.workloadRef.podGroupReplicaKey = "x"' | bind r-1 r-2
  gang_pods_json workload ns r 3 4 s | jq -c '.spec.workloadRef.podGroupReplicaKey = "y"' | bind r-3
  jq -cn '{metadata: {name: "plain"}, spec: {nodeName: "n-1"}}'
} | jq -s . >"$WORK/pods.json"
{
  gang_group_json workload ns a 3
  gang_group_json workload ns r 2
  jq -cn '{metadata: {name: "c"}, spec: {podGroups: [{name: "gang", policy: {basic: {}}}]}}'
} | jq -s . >"$WORK/wl.json"
gang_group_json podgroup ns b 3 | jq -s . >"$WORK/pg.json"
got=$(jq -n --slurpfile p "$WORK/pods.json" --slurpfile w "$WORK/wl.json" --slurpfile g "$WORK/pg.json" \
  '{pods: $p[0], workloads: $w[0], podgroups: $g[0]}' | gang_counts_from_json | sort)
want=$(printf '%s\n' "pg:b 3 4 3" "wl:a/gang 1 3 3" "wl:d/gang 0 2 0" "wl:r/gang/x 2 2 2" "wl:r/gang/y 1 2 2")
if [ "$got" = "$want" ]; then pass "gang counts: label and workloadRef gangs, replica keys, basic groups left out, unknown group min 0"; else fail "gang counts" "got: $(tr '\n' ';' <<<"$got") want: $(tr '\n' ';' <<<"$want")"; fi
partial=$(gang_partial_from_counts <<<"$got" | awk '{print $1}' | tr '\n' ' ')
if [ "$partial" = "wl:a/gang wl:r/gang/y " ]; then pass "partly bound gangs: wl:a/gang (1/3) and replica y (1/2), not the unknown d"; else fail "partly bound gangs" "got '$partial'"; fi
# 1.36+ PodGroup objects (np:NAME): a gang, a basic one (no gang), one whose PodGroup is missing
{
  gang_pods_json native ns e 1 3 s | bind e-1 e-2
  gang_pods_json native ns f 1 2 s | bind f-1
  gang_pods_json native ns h 1 2 s
} | jq -s . >"$WORK/npods.json"
jq -n '[{metadata: {name: "e"}, spec: {schedulingPolicy: {gang: {minCount: 3}}}},
        {metadata: {name: "f"}, spec: {schedulingPolicy: {basic: {}}}}]' >"$WORK/npg.json"
got=$(jq -n --slurpfile p "$WORK/npods.json" --slurpfile n "$WORK/npg.json" \
  '{pods: $p[0], workloads: [], podgroups: [], nativepodgroups: $n[0]}' | gang_counts_from_json | sort)
want=$(printf '%s\n' "np:e 2 3 3" "np:h 0 2 0")
if [ "$got" = "$want" ]; then pass "gang counts: schedulingGroup gangs, basic PodGroups left out, missing PodGroup min 0"; else fail "gang counts of schedulingGroup gangs" "got: $(tr '\n' ';' <<<"$got") want: $(tr '\n' ';' <<<"$want")"; fi
if gang_group_json bogus ns x 1 >/dev/null 2>&1; then fail "an unknown gang kind is refused"; else pass "an unknown gang kind is refused"; fi
p=$(GANG_POD_PATCH='.spec.nodeSelector = {"pool": "a"}' gang_pods_json podgroup ns g 2 2 sch 2 1Gi)
if jq -e '.metadata.name == "g-2" and .spec.schedulerName == "sch" and .metadata.labels["scheduling.x-k8s.io/pod-group"] == "g"
  and .spec.nodeSelector.pool == "a" and .spec.containers[0].resources.requests == {cpu: "2", memory: "1Gi"}' <<<"$p" >/dev/null; then
  pass "pod builder: name, scheduler, PodGroup label, requests, GANG_POD_PATCH"
else
  fail "pod builder: name, scheduler, PodGroup label, requests, GANG_POD_PATCH" "$p"
fi
g=$(GANG_TIMEOUT_S=30 GANG_MIN_RESOURCES='{"cpu": "3"}' gang_group_json podgroup ns g 4)
if jq -e '.spec == {minMember: 4, scheduleTimeoutSeconds: 30, minResources: {cpu: "3"}}' <<<"$g" >/dev/null; then pass "PodGroup builder: minMember, scheduleTimeoutSeconds, minResources"; else fail "PodGroup builder" "$g"; fi

# ---- 2. the monitor's verdict on crafted samples (0.5 s apart)
# samples FILE SPEC...: SPEC "i,key,bound,min" marks gang key partial in sample i; 1..10 samples
samples() {
  local f=$1 i s
  shift
  : >"$f"
  for i in $(seq 1 10); do
    echo "S $i $((1000 + i / 2)).$((i % 2 * 5))" >>"$f"
    for s in "$@"; do
      IFS=, read -r si k b m <<<"$s"
      [ "$si" = "$i" ] && echo "P $i $((1000 + i / 2)).$((i % 2 * 5)) $k $b 9 $m" >>"$f"
    done
  done
}
samples "$WORK/m1" 3,wl:g/gang,2,5 4,wl:g/gang,4,5
out=$(gang_aon_verdict "$WORK/m1"); rc=$?
if [ $rc = 0 ] && grep -q 'violations=0' <<<"$out" && grep -q 'longest_partial_s=0.5' <<<"$out"; then pass "a partial state over 2 samples (0.5 s, binds in flight) passes and is reported"; else fail "a transient partial state passes" "rc=$rc $out"; fi
out=$(gang_aon_partials "$WORK/m1" | tr '\n' ';')
if [ "$out" = "+1.0s wl:g/gang 2/9 (min 5);+1.5s wl:g/gang 4/9 (min 5);" ]; then pass "the partial samples of a monitor, in seconds since its first, for a failure's detail"; else fail "the partial samples of a monitor, for a failure's detail" "$out"; fi
# deleted by the test: pg:d partly bound from sample 2 to the end (as kubectl deletes it pod by
# pod), marked before sample 2's read ended -> out of the verdict; pg:e partly bound 3 s before
# its mark -> still a violation
samples "$WORK/m6" 2,pg:d,1,3 3,pg:d,1,3 4,pg:d,1,3 5,pg:d,1,3 6,pg:d,1,3 7,pg:d,1,3 8,pg:d,1,3 9,pg:d,1,3 10,pg:d,1,2
echo "D 0 1000.9 pg:d" >>"$WORK/m6"
out=$(gang_aon_verdict "$WORK/m6"); rc=$?
if [ $rc = 0 ] && grep -q 'partial_while_deleted=9 .*violations=0' <<<"$out"; then pass "a gang the test is deleting (gang_aon_deleting) is left out from its mark on, and counted"; else fail "a gang the test is deleting is left out from its mark on" "rc=$rc $out"; fi
samples "$WORK/m7" 2,pg:e,1,3 3,pg:e,1,3 4,pg:e,1,3 5,pg:e,1,3 6,pg:e,1,3 7,pg:e,1,3 8,pg:e,1,3 9,pg:e,1,3
echo "D 0 1004.6 pg:e" >>"$WORK/m7"
out=$(gang_aon_verdict "$WORK/m7"); rc=$?
if [ $rc = 1 ] && grep -q 'violations=1 pg:e:1/3:3.5s' <<<"$out"; then pass "partly bound for 3 s before its deletion mark still violates"; else fail "partly bound for 3 s before its deletion mark still violates" "rc=$rc $out"; fi
# a read that began before the mark but ended after it may already see the first deletes:
# left out too (else pg:g, partly bound in the last sample, would violate)
printf '%s\n' "S 1 1000.0 1000.1" "S 2 1000.5 1001.5" "P 2 1000.5 pg:g 1 2 3" "D 0 1001.0 pg:g" >"$WORK/m9"
out=$(gang_aon_verdict "$WORK/m9"); rc=$?
if [ $rc = 0 ]; then pass "a sample whose read ended after the deletion mark is left out for that gang"; else fail "a sample whose read ended after the deletion mark is left out for that gang" "rc=$rc $out"; fi
samples "$WORK/m8" 2,pg:f,1,3 3,pg:f,1,3 4,pg:f,1,3 5,pg:f,1,3 6,pg:f,1,3 7,pg:f,1,3 8,pg:f,1,3 9,pg:f,1,3
echo "D 0 1000.9 *" >>"$WORK/m8"
out=$(gang_aon_verdict "$WORK/m8"); rc=$?
if [ $rc = 0 ]; then pass "a deletion mark '*' covers every gang"; else fail "a deletion mark '*' covers every gang" "rc=$rc $out"; fi
samples "$WORK/m2" 2,pg:a,1,3 3,pg:a,1,3 4,pg:a,1,3 5,pg:a,1,3 6,pg:a,1,3 7,pg:a,1,3 8,pg:a,1,3
out=$(gang_aon_verdict "$WORK/m2"); rc=$?
if [ $rc = 1 ] && grep -q 'violations=1 pg:a:1/3:3.0s' <<<"$out"; then pass "a gang partly bound for 3 s violates"; else fail "a gang partly bound for 3 s violates" "rc=$rc $out"; fi
samples "$WORK/m3" 10,pg:z,2,3
out=$(gang_aon_verdict "$WORK/m3"); rc=$?
if [ $rc = 1 ] && grep -q 'pg:z:2/3:0.0s:at-end' <<<"$out"; then pass "a gang partly bound in the last sample violates"; else fail "a gang partly bound in the last sample violates" "rc=$rc $out"; fi
samples "$WORK/m4" 2,pg:a,1,3 4,pg:a,1,3 6,pg:a,1,3 8,pg:a,1,3
out=$(gang_aon_verdict "$WORK/m4"); rc=$?
if [ $rc = 0 ]; then pass "separate short partial states do not add up"; else fail "separate short partial states do not add up" "rc=$rc $out"; fi
echo "S 1 1000.0" >"$WORK/m5"
gang_aon_verdict "$WORK/m5" >/dev/null; rc=$?
if [ $rc = 2 ]; then pass "a monitor with fewer than 2 samples did not run (status 2)"; else fail "a monitor with fewer than 2 samples did not run (status 2)" "rc=$rc"; fi

# ---- 3. on the API
if [ -z "${KUBECONFIG:-}" ]; then
  fail "environment" "KUBECONFIG is not set: run via tests/run.sh e2e or eval \"\$(hack/cluster.sh env)\""
  summary
  exit 1
fi
# The cluster's own gang API: 1.35's v1alpha1 Workload, or 1.36+'s PodGroup objects.
KIND=workload KEY=wl:lib/gang BIGKEY=wl:big/gang
if ! gang_require_api workload >/dev/null && gang_native_gv >/dev/null; then
  KIND=native KEY=np:lib BIGKEY=np:big
fi
if ! why=$(gang_require_api $KIND); then
  fail "the $KIND gang API is served" "$why"
  summary
  exit 1
fi
kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
# A scheduler name nobody runs: the pods stay pending unless this test binds them.
if gang_create $KIND "$NS" lib 3 3 "nobody-$$" 2>"$WORK/create.err"; then pass "gang_create makes a $KIND gang of 3 the API accepts"; else fail "gang_create makes a $KIND gang of 3" "$(cat "$WORK/create.err")"; fi
got=$(gang_counts "$NS")
if [ "$got" = "$KEY 0 3 3" ]; then pass "gang_counts on the API: $KEY 0 of 3 bound, min 3"; else fail "gang_counts on the API" "got '$got'"; fi
# A namespace whose pod list is larger than one command-line argument may be (128 KiB).
if gang_create $KIND "$NS" big 80 80 "nobody-$$" 2>"$WORK/create.err" && got=$(gang_counts "$NS" 2>&1 | sort) &&
  [ "$got" = "$(printf '%s\n' "$BIGKEY 0 80 80" "$KEY 0 3 3" | sort)" ]; then
  pass "gang_counts with 83 pods in the namespace (a pod list over 128 KiB)"
else
  fail "gang_counts with 83 pods in the namespace (a pod list over 128 KiB)" "$(cat "$WORK/create.err") got: $got"
fi
node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
gang_aon_monitor_start "$NS" "$WORK/mon" 0.3
sleep 1
kubectl create -f - <<EOF >/dev/null
{"apiVersion": "v1", "kind": "Binding", "metadata": {"namespace": "$NS", "name": "lib-1"}, "target": {"kind": "Node", "name": "$node"}}
EOF
sleep 1.5
out=$(gang_aon_monitor_stop); rc=$?
if [ $rc = 1 ] && grep -q "$KEY:1/3" <<<"$out"; then pass "the monitor sees a gang left with 1 of 3 bound ($out)"; else fail "the monitor sees a gang left with 1 of 3 bound" "rc=$rc $out"; fi
if [ "$(gang_bound "$NS" "$KEY")" = 1 ]; then pass "gang_bound: 1"; else fail "gang_bound: 1" "$(gang_bound "$NS" "$KEY")"; fi
summary
