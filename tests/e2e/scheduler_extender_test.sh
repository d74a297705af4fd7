#!/usr/bin/env bash
# tests/e2e/scheduler_extender_test.sh: the real kube-scheduler with tarema-scheduler as its
# extender (--mode extender, filter + prioritize, nodeCacheCapable true) places pods where
# tarema's prioritize says, even where kube-scheduler's own scoring prefers another node:
# a task labelled (1,1,1) goes to the small slow node although the big fast node is emptier.
# The extender is served over HTTPS and kube-scheduler authenticates with a client certificate
# (tlsConfig certFile/keyFile/caFile, the only credential its extender client can send): calls
# without one, or with one from another CA, are refused 401; /bind does not exist (no bindVerb,
# no --extender-bind).
# Preemption (preemptVerb, issue 31): on two 2-core nodes filled with low-priority pods,
#   a. a high-priority pod that fits only on pre-1 preempts its filler through kube-scheduler,
#      and tarema's /preempt was called and kept the node;
#   b. with pre-1 held by a Reservation for another owner, kube-scheduler would preempt there
#      (the cheaper victim), but tarema's /preempt drops pre-1, so the victim on pre-2 goes and
#      the pod lands on pre-2; pre-1's pod is not touched;
#   c. the reference: the same as b under kube-scheduler without the extender evicts on pre-1.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): needs kube-scheduler stopped, runs and restarts it with an extender config
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

ID=$SCHED_E2E_ID
NS=sched-ext-$ID
PROFILE=kube-ext-$ID
P=sx$ID
WORK=$(mktemp -d)
STARTED_KS=0
cleanup() {
  [ "$STARTED_KS" = 1 ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  stop_schedulers
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl get nodes -o name 2>/dev/null | grep "^node/$P" | xargs -r kubectl delete --wait=false >/dev/null 2>&1 || true
  kubectl delete priorityclass "$P-low" "$P-mid" "$P-high" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

if bash "$REPO_ROOT/hack/cluster.sh" status 2>/dev/null | qgrep -E '^ +scheduler +running'; then
  fail "kube-scheduler of this cluster is free for the test" "another test left it running (hack/cluster.sh scheduler stop)"
  summary
  exit 1
fi
kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}slow, count: 1, cpu: 4, memory: 8Gi, pods: 20,
     labels: {tarema.io/cpu: "1", tarema.io/mem: "1", tarema.io/io: "1", tarema.io/group: "slow", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}fast, count: 1, cpu: 32, memory: 64Gi, pods: 20,
     labels: {tarema.io/cpu: "3", tarema.io/mem: "3", tarema.io/io: "3", tarema.io/group: "fast", tarema.io/e2e: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}pre, count: 2, cpu: 2, memory: 4Gi, pods: 20,
     labels: {tarema.io/e2e-pre: "$ID"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"

TLS=$REPO_ROOT/tests/fixtures/tls
# --plugin-metrics-sample-percent 100: every request's plugin calls timed (checked after a.)
extender_setup "$PROFILE" --plugin-metrics-sample-percent 100
PORT=$SCHED_PORT

# pod_on NAME CPU MEM IO: a pod of the extender profile restricted to this test's two nodes.
pod_on() {
  pod_json "$NS" "$1" "$PROFILE" 500m 512Mi \
    "$(jq -cn --arg c "$2" --arg m "$3" --arg i "$4" '{"tarema.io/cpu": $c, "tarema.io/mem": $m, "tarema.io/io": $i}')" "$ID" |
    jq -c --arg id "$ID" '.spec.nodeSelector = {"tarema.io/e2e": $id}'
}
pod_on slow-task 1 1 1 | kubectl create -f - >/dev/null
pod_on fast-task 3 3 3 | kubectl create -f - >/dev/null
bound2() { [ -n "$(pod_node "$NS" slow-task)" ] && [ -n "$(pod_node "$NS" fast-task)" ]; }
if wait_for 60 bound2; then pass "kube-scheduler binds both pods"; else fail "kube-scheduler binds both pods" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi

# What tarema's prioritize says for the slow task, asked directly with the same arguments.
args=$(kubectl get pod -n "$NS" slow-task -o json | jq -c --arg a "${P}slow-1" --arg b "${P}fast-1" '{Pod: ., Nodes: null, NodeNames: [$a, $b]}')
MTLS=(--cacert "$TLS/ca.crt" --cert "$TLS/client.crt" --key "$TLS/client.key")
prio=$(curl -sf "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d "$args" "https://127.0.0.1:$PORT/prioritize")
best=$(jq -r 'max_by(.Score).Host' <<<"$prio" 2>/dev/null)
if [ "$best" = "${P}slow-1" ]; then pass "tarema's prioritize ranks the slow node first for a (1,1,1) task"; else fail "tarema's prioritize ranks the slow node first for a (1,1,1) task" "$prio"; fi
node=$(pod_node "$NS" slow-task)
if [ "$node" = "$best" ]; then pass "kube-scheduler placed the (1,1,1) task where tarema's prioritize says ($node), not on the emptier fast node"; else fail "kube-scheduler placed the (1,1,1) task where tarema's prioritize says" "bound to '$node', tarema says '$best'"; fi
node=$(pod_node "$NS" fast-task)
if [ "$node" = "${P}fast-1" ]; then pass "the (3,3,3) task went to the fast node"; else fail "the (3,3,3) task went to the fast node" "bound to '$node'"; fi

# Filter: a pod too big for the slow node only may go to the fast one, and the reason is given.
args=$(pod_on big 1 1 1 | jq -c '.spec.containers[0].resources.requests.cpu = "8" | .metadata.uid = "u-big"' | jq -c --arg a "${P}slow-1" --arg b "${P}fast-1" '{Pod: ., Nodes: null, NodeNames: [$a, $b]}')
res=$(curl -sf "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d "$args" "https://127.0.0.1:$PORT/filter")
if jq -e --arg a "${P}slow-1" --arg b "${P}fast-1" '.NodeNames == [$b] and (.FailedNodes[$a] | test("Insufficient cpu"))' <<<"$res" >/dev/null; then
  pass "filter keeps only nodes with room and says why the others failed"
else
  fail "filter keeps only nodes with room and says why the others failed" "$res"
fi

# Reservations: the extender honours those its scheduler name's tarema scheduler admitted. No
# tarema scheduler runs here, so the status it would write (Active, slow-1 held whole) is
# written by hand; the extender restores the table from it, read-only.
apply_shared -f "$REPO_ROOT/charts/tarema/crds/tarema.io_reservations.yaml" &&
  kubectl wait --for condition=established --timeout=30s crd/reservations.tarema.io >/dev/null
st=$(date -u -d "@$(($(date +%s) - 60))" +%Y-%m-%dT%H:%M:%SZ)
en=$(date -u -d "@$(($(date +%s) + 3600))" +%Y-%m-%dT%H:%M:%SZ)
jq -cn --arg ns "$NS" --arg st "$st" --arg en "$en" --arg n "${P}slow-1" --arg s "$PROFILE" '
  {apiVersion: "tarema.io/v1alpha1", kind: "Reservation", metadata: {namespace: $ns, name: "hold"},
   spec: {startTime: $st, endTime: $en, nodes: [$n], schedulerName: $s,
          owner: {selector: {matchLabels: {"tarema.io/run": "owner"}}}}}' | kubectl create -f - >/dev/null
kubectl patch reservation -n "$NS" hold --subresource=status --type=merge -p "$(jq -cn --arg n "${P}slow-1" \
  '{status: {phase: "Active", nodes: [{name: $n, pods: 0, requests: {cpu: "4", memory: "8Gi"}}], nodeNames: $n}}')" >/dev/null
if wait_for 30 grep -q "reservation=$NS/hold restored" "$WORK/ext.log"; then
  pass "the extender restores the held reservation from status.nodes (read-only)"
else
  fail "the extender restores the held reservation from status.nodes" "$(grep -i reserv "$WORK/ext.log" | tail -n 5)"
fi
# filter_as RUN: /filter for a small (1,1,1) pod of tarema.io/run=RUN on both nodes.
filter_as() {
  local a
  a=$(pod_on "r-$1" 1 1 1 | jq -c --arg r "$1" '.metadata.uid = "u-" + $r | .metadata.labels["tarema.io/run"] = $r' |
    jq -c --arg a "${P}slow-1" --arg b "${P}fast-1" '{Pod: ., Nodes: null, NodeNames: [$a, $b]}')
  curl -sf "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d "$a" "https://127.0.0.1:$PORT/filter"
}
res=$(filter_as other)
if jq -e --arg a "${P}slow-1" --arg b "${P}fast-1" '.NodeNames == [$b] and (.FailedNodes[$a] | test("reserved for another owner"))' <<<"$res" >/dev/null; then
  pass "filter refuses the reserved node to another owner's pod, with the Reservation plugin's reason"
else
  fail "filter refuses the reserved node to another owner's pod" "$res"
fi
res=$(filter_as owner)
if jq -e --arg a "${P}slow-1" '(.NodeNames | index($a)) != null' <<<"$res" >/dev/null; then
  pass "filter passes the reserved node to the owner's pod"
else
  fail "filter passes the reserved node to the owner's pod" "$res"
fi
kubectl delete reservation -n "$NS" hold >/dev/null
if wait_for 10 bash -c "grep -q 'reservation=$NS/hold released' '$WORK/ext.log'" &&
  res=$(filter_as other) && jq -e --arg a "${P}slow-1" '(.NodeNames | index($a)) != null' <<<"$res" >/dev/null; then
  pass "a deleted reservation no longer holds the node in the extender"
else
  fail "a deleted reservation no longer holds the node in the extender" "$res"
fi

# Authentication: kube-scheduler's calls came with its client certificate; nobody else's do.
if grep -q 'path=/prioritize status=200 .*auth=client-cert' "$WORK/ext.log"; then
  pass "kube-scheduler called /prioritize over mTLS (auth=client-cert)"
else
  fail "kube-scheduler called /prioritize over mTLS" "$(grep 'http request' "$WORK/ext.log" | tail -n 3)"
fi
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
code=$(status --cacert "$TLS/ca.crt" -X POST -d "$args" "https://127.0.0.1:$PORT/filter")
[ "$code" = 401 ] && pass "/filter without a client certificate or token: 401" || fail "/filter without credentials refused" "status $code"
code=$(status --cacert "$TLS/ca.crt" --cert "$TLS/rogue-client.crt" --key "$TLS/rogue-client.key" -X POST -d "$args" "https://127.0.0.1:$PORT/filter")
case $code in 401 | 000) pass "/filter with a certificate of another CA refused ($code)" ;; *) fail "/filter with a certificate of another CA refused" "status $code" ;; esac
code=$(status -X POST -d "$args" "http://127.0.0.1:$PORT/filter")
[ "$code" != 200 ] && pass "no plain HTTP on the extender port ($code)" || fail "no plain HTTP on the extender port" "status $code"
code=$(status "${MTLS[@]}" -X POST -d '{"PodName":"slow-task","PodNamespace":"'"$NS"'","Node":"'"${P}fast-1"'"}' "https://127.0.0.1:$PORT/bind")
[ "$code" = 404 ] && pass "/bind does not exist without extender binding (404, even with a valid certificate)" || fail "/bind absent without extender binding" "status $code"
code=$(status --cacert "$TLS/ca.crt" -X POST -d '{}' "https://127.0.0.1:$PORT/preempt")
[ "$code" = 401 ] && pass "/preempt without a client certificate or token: 401" || fail "/preempt without credentials refused" "status $code"
code=$(status --cacert "$TLS/ca.crt" "https://127.0.0.1:$PORT/healthz")
[ "$code" = 200 ] && pass "/healthz stays open (200 without credentials)" || fail "/healthz stays open" "status $code"
# ---- preemption through kube-scheduler (preemptVerb) ----
PRE1=${P}pre-1
PRE2=${P}pre-2
pc() { # NAME VALUE
  printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: %s}\nvalue: %s\n' "$1" "$2" |
    kubectl create -f - >/dev/null
}
check "priority classes low 100, mid 500, high 1000" bash -c "$(declare -f pc); pc $P-low 100 && pc $P-mid 500 && pc $P-high 1000"
# filler NAME NODE CLASS: a 1500m pod bound to NODE by spec.nodeName (no scheduler involved).
filler() {
  pod_json "$NS" "$1" "$PROFILE" 1500m 64Mi '{}' "$ID" |
    jq -c --arg n "$2" --arg pc "$P-$3" '.spec.nodeName = $n | .spec.priorityClassName = $pc' |
    kubectl create -f - >/dev/null
}
# preemptor NAME SCHED SELECTOR_JSON: a 1-core high-priority pod of SCHED, of run "other".
preemptor() {
  pod_json "$NS" "$1" "$2" 1 64Mi '{}' "$ID" |
    jq -c --arg pc "$P-high" --argjson sel "$3" '.spec.priorityClassName = $pc | .spec.nodeSelector = $sel
      | .metadata.labels = {"tarema.io/run": "other"}' |
    kubectl create -f - >/dev/null
}
bound_to() { [ "$(pod_node "$NS" "$1")" = "$2" ]; }
gone_or_leaving() { # POD: deleted, or its deletion under way
  local d
  d=$(kubectl get pod -n "$NS" "$1" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null) || return 0
  [ -n "$d" ]
}
untouched() { # POD NODE: still there, no deletion, still on its node
  local j
  j=$(kubectl get pod -n "$NS" "$1" -o json 2>/dev/null) || return 1
  jq -e --arg n "$2" '.metadata.deletionTimestamp == null and .spec.nodeName == $n' <<<"$j" >/dev/null
}
clear_pre() { # the preemption cases' pods deleted, and gone
  kubectl delete pod -n "$NS" -l tarema.io/e2e-case=pre --grace-period=0 --force --wait=false >/dev/null 2>&1
  wait_for 60 bash -c "[ -z \"\$(kubectl get pods -n $NS -l tarema.io/e2e-case=pre -o name 2>/dev/null)\" ]"
}
label_case() { kubectl label pod -n "$NS" "$@" tarema.io/e2e-case=pre --overwrite >/dev/null; }
nodes_known() { # NODES...: tarema's cache has seen the fillers (its /filter has no room there for 1 core)
  local a
  a=$(jq -cn --arg ns "$NS" '{Pod: {metadata: {name: "probe", namespace: $ns, uid: "u-probe"},
      spec: {containers: [{name: "c", resources: {requests: {cpu: "1"}}}]}}, NodeNames: $ARGS.positional}' --args "$@")
  curl -sf "${MTLS[@]}" -X POST -H 'Content-Type: application/json' -d "$a" "https://127.0.0.1:$PORT/filter" |
    jq -e '(.NodeNames | length) == 0' >/dev/null
}

# a. one candidate, kept: kube-scheduler evicts the filler and binds the preemptor there
filler low-a "$PRE1" low && label_case low-a
wait_for 30 nodes_known "$PRE1" || fail "tarema's cache counts the filler on $PRE1" "$(kubectl get pods -n "$NS" -o wide 2>&1)"
preemptor urgent-a "$PROFILE" "$(jq -cn --arg n "$PRE1" '{"kubernetes.io/hostname": $n}')" && label_case urgent-a
if wait_for 60 bound_to urgent-a "$PRE1"; then
  pass "a: kube-scheduler preempts low-a and binds urgent-a on $PRE1"
else
  fail "a: kube-scheduler preempts low-a and binds urgent-a on $PRE1" "$(kubectl get pods -n "$NS" -o wide 2>&1 | tail -n +2)"
fi
check "a: the victim low-a is deleted" gone_or_leaving low-a
if grep -q "path=/preempt status=200 .*auth=client-cert" "$WORK/ext.log" &&
  grep -q "extender preempt pod=$NS/urgent-a form=NodeNameToMetaVictims candidates=1 kept=1 dropped=0" "$WORK/ext.log"; then
  pass "a: kube-scheduler called tarema's /preempt over mTLS (UIDs, nodeCacheCapable) and tarema kept $PRE1"
else
  fail "a: kube-scheduler called tarema's /preempt and tarema kept $PRE1" "$(grep -E 'preempt' "$WORK/ext.log" | tail -n 5)"
fi
kept=$(curl -sf "${MTLS[@]}" "https://127.0.0.1:$PORT/metrics" | awk '$1 == "tarema_extender_preempt_nodes_total{outcome=\"kept\"}" {print $2}')
[ "${kept:-0}" -ge 1 ] 2>/dev/null && pass "a: tarema_extender_preempt_nodes_total{outcome=\"kept\"} = $kept" ||
  fail "a: tarema_extender_preempt_nodes_total{outcome=\"kept\"} counts the kept node" "got '$kept'"
# kube-scheduler's framework timings of the extender's cycles (one per filter/prioritize call)
metrics=$(curl -sf "${MTLS[@]}" "https://127.0.0.1:$PORT/metrics")
for m in "scheduler_framework_extension_point_duration_seconds_count{profile=\"$PROFILE\",extension_point=\"PreFilter\",status=\"Success\"}" \
         'scheduler_plugin_execution_duration_seconds_count{plugin="NodeResourcesFit",extension_point="Filter",status="Success"}'; do
  v=$(awk -v k="$m" '$1 == k {print $2}' <<<"$metrics")
  [ "${v:-0}" -ge 1 ] 2>/dev/null && pass "extender: $m = $v" || fail "extender: $m > 0" "got '$v'"
done
clear_pre

# b. pre-1 held by a Reservation for another owner (status written by hand, as above)
jq -cn --arg ns "$NS" --arg st "$st" --arg en "$en" --arg n "$PRE1" --arg s "$PROFILE" '
  {apiVersion: "tarema.io/v1alpha1", kind: "Reservation", metadata: {namespace: $ns, name: "hold-pre"},
   spec: {startTime: $st, endTime: $en, nodes: [$n], schedulerName: $s,
          owner: {selector: {matchLabels: {"tarema.io/run": "owner"}}}}}' | kubectl create -f - >/dev/null
kubectl patch reservation -n "$NS" hold-pre --subresource=status --type=merge -p "$(jq -cn --arg n "$PRE1" \
  '{status: {phase: "Active", nodes: [{name: $n, pods: 0, requests: {cpu: "2", memory: "4Gi"}}], nodeNames: $n}}')" >/dev/null
wait_for 30 grep -q "reservation=$NS/hold-pre restored" "$WORK/ext.log" ||
  fail "b: the extender restores hold-pre" "$(grep -i reserv "$WORK/ext.log" | tail -n 3)"
SEL=$(jq -cn --arg id "$ID" '{"tarema.io/e2e-pre": $id}')
filler low-b "$PRE1" low && filler mid-b "$PRE2" mid && label_case low-b mid-b
wait_for 30 nodes_known "$PRE1" "$PRE2" || fail "tarema's cache counts the fillers" "$(kubectl get pods -n "$NS" -o wide 2>&1)"
preemptor urgent-b "$PROFILE" "$SEL" && label_case urgent-b
if wait_for 60 bound_to urgent-b "$PRE2"; then
  pass "b: urgent-b lands on $PRE2 (tarema vetoed $PRE1, held for another owner)"
else
  fail "b: urgent-b lands on $PRE2" "$(kubectl get pods -n "$NS" -o wide 2>&1 | tail -n +2)"
fi
check "b: mid-b on $PRE2 is the victim" gone_or_leaving mid-b
check "b: low-b on the reserved $PRE1 is not touched (kube-scheduler alone would evict it: c)" untouched low-b "$PRE1"
if grep -q "extender preempt: node dropped pod=$NS/urgent-b node=$PRE1 reason=\".*reserved for another owner" "$WORK/ext.log" &&
  grep -q "extender preempt pod=$NS/urgent-b form=NodeNameToMetaVictims candidates=2 kept=1 dropped=1" "$WORK/ext.log"; then
  pass "b: tarema's /preempt got both candidates and dropped $PRE1 with the Reservation's reason"
else
  fail "b: tarema's /preempt dropped $PRE1 with the Reservation's reason" "$(grep 'preempt' "$WORK/ext.log" | tail -n 5)"
fi
# bad input: 400 naming the field
code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' "${MTLS[@]}" -X POST -H 'Content-Type: application/json' \
  -d '{"Pod": {"metadata": {"name": "x"}}, "NodeNameToMetaVictims": {"n": {"Pods": [{}]}}}' "https://127.0.0.1:$PORT/preempt")
if [ "$code" = 400 ] && grep -q 'NodeNameToMetaVictims\[\\*"n\\*"\]\.Pods\[0\]\.UID is missing' "$WORK/bad.json"; then
  pass "/preempt with a victim without UID: 400 naming NodeNameToMetaVictims[\"n\"].Pods[0].UID"
else
  fail "/preempt with a victim without UID: 400 naming the field" "status $code: $(cat "$WORK/bad.json")"
fi
clear_pre

# c. the reference: kube-scheduler alone (no extender) on the same layout evicts the cheaper
# victim on pre-1, reservation or not: the veto in b is tarema's.
bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
if bash "$REPO_ROOT/hack/cluster.sh" scheduler start >"$WORK/ks-ref.out" 2>&1 || wait_for 10 ks_healthy; then
  filler low-c "$PRE1" low && filler mid-c "$PRE2" mid && label_case low-c mid-c
  preemptor urgent-c default-scheduler "$SEL" && label_case urgent-c
  if wait_for 60 bound_to urgent-c "$PRE1"; then
    pass "c: kube-scheduler without the extender preempts on $PRE1 (the reserved node)"
  else
    fail "c: kube-scheduler without the extender preempts on $PRE1" "$(kubectl get pods -n "$NS" -o wide 2>&1 | tail -n +2)"
  fi
  check "c: its victim is low-c" gone_or_leaving low-c
  check "c: mid-c stays" untouched mid-c "$PRE2"
  clear_pre
else
  fail "c: kube-scheduler restarts without the extender" "$(tail -n 5 "$WORK/ks-ref.out")"
fi
summary
