#!/usr/bin/env bash
# tests/e2e/scheduler_preferences_test.sh: the soft preferences kube-scheduler 1.35 scores,
# scored alike by tarema-scheduler --policy tarema (issue 30). Three unprofiled 8-core kwok
# nodes of its own, which tarema's policy rates alike but for their load: a-1 and a-2 in zone
# a, both with a PreferNoSchedule taint, b-1 in zone b carrying a 2-cpu filler pod; a-1 has
# disk=ssd. Pods placed beforehand by nodeName: app=web on a-1 and a-2, app=db on a-1. Each
# case runs the same pod under the real kube-scheduler (the reference) and under tarema; both
# must choose the one node the preference makes best (in every case the node the load alone
# would not choose, so a preference tarema ignored would show):
#   1. preferred node affinity to disk=ssd                        -> a-1
#   2. no toleration of the PreferNoSchedule taint                 -> b-1
#   3. ScheduleAnyway zone spread of app=web (zone a has 2)        -> b-1
#   4. preferred pod affinity to app=db (hostname)                 -> a-1
#   5. preferred pod anti-affinity to app=web (hostname)           -> b-1
# Pods of the other cases tolerate the PreferNoSchedule taint. Then kube's default spreading
# (PodTopologySpread's System default constraints, hostname maxSkew 3 and zone maxSkew 5): a
# ReplicaSet of 8 pods per scheduler without constraints of their own, tolerating the taint: by
# load alone tarema would put all of them in zone a (b-1 carries the filler); spread, both
# zones get at least 2 of them, under kube-scheduler and under tarema. Without the right to
# read Services and controllers tarema says so once for each and still binds such pods.
# Not compared: node groups (profiled nodes, where tarema's policy and kube-scheduler's
# NodeResourcesFit legitimately disagree), ImageLocality (kwok nodes report no images).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin prefs sp
KS_STARTED=
extra_cleanup() {
  [ -n "$KS_STARTED" ] && bash "$REPO_ROOT/hack/cluster.sh" scheduler stop >/dev/null 2>&1
  # the cluster-scoped objects of the chart's scheduler RBAC (the last case)
  kubectl delete clusterrole,clusterrolebinding "r$ID-tarema-scheduler" >/dev/null 2>&1
  kubectl delete validatingadmissionpolicy,validatingadmissionpolicybinding \
    "r$ID-tarema-scheduler-pod-status" "r$ID-tarema-scheduler-pod-annotation" >/dev/null 2>&1
  return 0
}
command -v jq >/dev/null || { fail "jq in PATH"; summary; exit 1; }
sched_e2e_namespace
kube_scheduler_up

ZONE=topology.kubernetes.io/zone
cat >"$WORK/nodes.yaml" <<EOF
nodes:
  - {prefix: ${P}a, count: 2, cpu: 8, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e-prefs: "$ID", $ZONE: "z$ID-a"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule},
              {key: tarema.io/e2e-slow, value: "yes", effect: PreferNoSchedule}]}
  - {prefix: ${P}b, count: 1, cpu: 8, memory: 16Gi, pods: 110,
     labels: {tarema.io/e2e-prefs: "$ID", $ZONE: "z$ID-b"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
EOF
check "three 8-core nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
check "a-1 labelled disk=ssd" kubectl label node "${P}a-1" disk=ssd

TOL_SLOW='.spec.tolerations += [{key: "tarema.io/e2e-slow", operator: "Exists", effect: "PreferNoSchedule"}]'
# pod NAME SCHEDULER CPU MEMORY LABELS_JSON [JQ_FILTER]: a pod on this test's nodes.
pod() {
  pod_json "$NS" "$1" "$2" "$3" "$4" '{}' "$ID" |
    jq -c --arg id "$ID" --argjson labels "$5" "
      .metadata.labels = \$labels | .spec.nodeSelector = {\"tarema.io/e2e-prefs\": \$id}
      | ${6:-.}" |
    kubectl create -f - >/dev/null
}
# placed NAME NODE CPU MEMORY LABELS_JSON: a pod bound by nodeName (no scheduler).
placed() {
  pod "$1" none "$3" "$4" "$5" "$TOL_SLOW | .spec.nodeName = \"$2\""
}
running() { [ "$(kubectl get pod -n "$NS" "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
placed web-1 "${P}a-1" 100m 64Mi '{"app": "web"}'
placed web-2 "${P}a-2" 100m 64Mi '{"app": "web"}'
placed db-1 "${P}a-1" 100m 64Mi '{"app": "db"}'
placed filler "${P}b-1" 2 4Gi '{"app": "filler"}'
all_running() { local p; for p in web-1 web-2 db-1 filler; do running "$p" || return 1; done; }
if wait_for 60 all_running; then pass "pods placed by nodeName run"; else fail "pods placed by nodeName run" "$(kubectl get pods -n "$NS" -o wide 2>&1)"; fi

sched_e2e_start --policy tarema
KS=default-scheduler

bound() { [ -n "$(pod_node "$NS" "$1")" ]; }
# same WHAT WANT JQ_FILTER: the pod (10m, 16Mi, label app=case) under kube-scheduler, then
# under tarema; each must be bound to node WANT.
same() {
  local what=$1 want=$2 filter=$3 n k t
  n=$((${N_CASE:-0} + 1))
  N_CASE=$n
  k=k-case$n
  t=t-case$n
  pod "$k" "$KS" 10m 16Mi '{"app": "case"}' "$filter"
  if wait_for 60 bound "$k" && [ "$(pod_node "$NS" "$k")" = "$want" ]; then
    pass "kube-scheduler (reference): $what -> ${want#"$P"}"
  else
    fail "kube-scheduler (reference): $what -> ${want#"$P"}" "node '$(pod_node "$NS" "$k")'; $(notes "$k")"
  fi
  pod "$t" "$SCHED" 10m 16Mi '{"app": "case"}' "$filter"
  if wait_for 60 bound "$t" && [ "$(pod_node "$NS" "$t")" = "$want" ]; then
    pass "tarema: $what -> ${want#"$P"}, as kube-scheduler"
  else
    fail "tarema: $what -> ${want#"$P"}, as kube-scheduler" "node '$(pod_node "$NS" "$t")'; $(notes "$t")"
  fi
}
term() { jq -cn --arg v "$1" '{labelSelector: {matchLabels: {app: $v}}, topologyKey: "kubernetes.io/hostname"}'; }

same "preferred node affinity to disk=ssd" "${P}a-1" \
  "$TOL_SLOW | .spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution = [{weight: 50, preference: {matchExpressions: [{key: \"disk\", operator: \"In\", values: [\"ssd\"]}]}}]"
same "PreferNoSchedule taint on a-1 and a-2 not tolerated" "${P}b-1" "."
same "ScheduleAnyway zone spread of app=web" "${P}b-1" \
  "$TOL_SLOW | .spec.topologySpreadConstraints = [{maxSkew: 1, topologyKey: \"$ZONE\", whenUnsatisfiable: \"ScheduleAnyway\", labelSelector: {matchLabels: {app: \"web\"}}}]"
same "preferred pod affinity to app=db" "${P}a-1" \
  "$TOL_SLOW | .spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution = [{weight: 100, podAffinityTerm: $(term db)}]"
same "preferred pod anti-affinity to app=web" "${P}b-1" \
  "$TOL_SLOW | .spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution = [{weight: 100, podAffinityTerm: $(term web)}]"

# rs NAME SCHEDULER: a ReplicaSet of 8 pods (10m, 16Mi, app=NAME) on this test's nodes,
# tolerating every taint there, with no topologySpreadConstraints of their own.
rs() {
  pod_json "$NS" x "$2" 10m 16Mi '{}' "$ID" |
    jq -c --arg id "$ID" --arg app "$1" '
      {apiVersion: "apps/v1", kind: "ReplicaSet", metadata: {namespace: .metadata.namespace, name: $app},
       spec: {replicas: 8, selector: {matchLabels: {app: $app}},
              template: {metadata: {labels: {app: $app}},
                         spec: (.spec | .nodeSelector = {"tarema.io/e2e-prefs": $id}
                                | .tolerations += [{key: "tarema.io/e2e-slow", operator: "Exists",
                                                    effect: "PreferNoSchedule"}])}}}' |
    kubectl create -f - >/dev/null
}
# zones APP: "A B" = how many of the ReplicaSet's bound pods are in zone a and in zone b.
zones() {
  kubectl get pods -n "$NS" -l "app=$1" -o json |
    jq -r --arg a "${P}a" --arg b "${P}b" '[.items[].spec.nodeName // ""] |
      "\([.[] | select(startswith($a))] | length) \([.[] | select(startswith($b))] | length)"'
}
all_bound() { local z; z=$(zones "$1"); [ $((${z% *} + ${z#* })) -eq 8 ]; }
spread_case() { # spread_case APP SCHEDULER WHO
  local z
  check "$3: ReplicaSet $1 created" rs "$1" "$2"
  wait_for 90 all_bound "$1"
  z=$(zones "$1")
  if [ "${z% *}" -ge 2 ] && [ "${z#* }" -ge 2 ] && [ $((${z% *} + ${z#* })) -eq 8 ]; then
    pass "$3: the 8 pods of a ReplicaSet without constraints spread over both zones (a ${z% *}, b ${z#* })"
  else
    fail "$3: the 8 pods of a ReplicaSet without constraints spread over both zones" "zone a ${z% *}, zone b ${z#* }; $(kubectl get pods -n "$NS" -l "app=$1" -o wide 2>&1 | tail -n 8)"
  fi
}
spread_case rs-k "$KS" "kube-scheduler (reference)"
spread_case rs-t "$SCHED" "tarema, as kube-scheduler"
# explain weighs the default spreading of such a pod as the live scheduler does
rs_pod=$(kubectl get pods -n "$NS" -l app=rs-t -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
out=$("$BIN/tarema-scheduler" explain "$NS/$rs_pod" -o json --policy tarema 2>"$WORK/explain.err")
if jq -e '[.. | objects | select(has("scoreParts")) | .scoreParts | has("PodTopologySpread")] | any' <<<"$out" >/dev/null 2>&1; then
  pass "explain shows the default spreading (PodTopologySpread part) of a ReplicaSet's pod"
else
  fail "explain shows the default spreading (PodTopologySpread part) of a ReplicaSet's pod" "$(head -c 400 <<<"$out") $(tail -n 3 "$WORK/explain.err")"
fi

# Without the right to read Services and controllers (the chart's scheduler RBAC less those
# rules), tarema reports each once and schedules on without default spreading.
HELM=$(command -v helm || echo "$HOME/.cache/tarema/bin/helm")
CR=r$ID-tarema-scheduler
norbac_sa() {
  "$HELM" template "r$ID" "$REPO_ROOT/charts/tarema" -n "$NS" --show-only templates/scheduler-rbac.yaml |
    kubectl apply -n "$NS" -f - >/dev/null &&
    kubectl get clusterrole "$CR" -o json |
    jq 'del(.metadata.resourceVersion) | .rules |= map(select(((.resources // []) | index("services") or index("replicasets")) | not))' |
    kubectl replace -f - >/dev/null &&
    [ "$(kubectl auth can-i list services --as "system:serviceaccount:$NS:$CR")" = no ] &&
    [ "$(kubectl auth can-i list replicasets.apps --as "system:serviceaccount:$NS:$CR")" = no ] &&
    [ "$(kubectl auth can-i list pods --as "system:serviceaccount:$NS:$CR")" = yes ]
}
check "the chart's scheduler RBAC without services and controllers" norbac_sa
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$WORK/ca.crt"
cat >"$WORK/sa.kubeconfig" <<Y
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')", certificate-authority: "$WORK/ca.crt"}}]
users: [{name: sa, user: {token: "$(kubectl -n "$NS" create token "$CR" --duration 1h 2>/dev/null)"}}]
contexts: [{name: c, context: {cluster: c, user: sa, namespace: "$NS"}}]
current-context: c
Y
if start_scheduler "$WORK/norbac.log" --scheduler-name "$SCHED-r" --policy tarema --leader-elect=false \
  --kubeconfig "$WORK/sa.kubeconfig"; then
  pass "tarema starts without the right to read Services and controllers"
else
  fail "tarema starts without the right to read Services and controllers" "$(tail -n 5 "$WORK/norbac.log")"
fi
rs rs-r "$SCHED-r"
wait_for 60 all_bound rs-r
z=$(zones rs-r)
[ $((${z% *} + ${z#* })) -eq 8 ] && pass "without them: the ReplicaSet's 8 pods are bound" ||
  fail "without them: the ReplicaSet's 8 pods are bound" "zone a ${z% *}, zone b ${z#* }; $(tail -n 5 "$WORK/norbac.log")"
# the rules removed held all four kinds: each reported once, nothing else refused
said=$(grep -c 'not readable' "$WORK/norbac.log")
refused=$(grep -ci 'forbidden' "$WORK/norbac.log")
[ "$said" = 4 ] && [ "$refused" = 4 ] && pass "each unreadable kind reported once, nothing else refused" ||
  fail "each unreadable kind reported once, nothing else refused" "$said reports, $refused lines say forbidden: $(grep -i 'forbidden' "$WORK/norbac.log" | cut -c1-160 | head -6)"
kill "$SCHED_PID" 2>/dev/null
wait "$SCHED_PID" 2>/dev/null

# explain names the parts of the last case's choice (scoreParts beside the policy's)
out=$("$BIN/tarema-scheduler" explain "$NS/t-case5" -o json --policy tarema 2>"$WORK/explain.err")
if jq -e '[.. | objects | select(has("scoreParts")) | .scoreParts | has("InterPodAffinity")] | any' <<<"$out" >/dev/null 2>&1; then
  pass "explain shows the InterPodAffinity part of the scores"
else
  fail "explain shows the InterPodAffinity part of the scores" "$(head -c 400 <<<"$out") $(tail -n 3 "$WORK/explain.err")"
fi

out=$(check_fit)
if [ $? = 0 ] && [ -z "$out" ]; then pass "every node's pods fit it"; else fail "every node's pods fit it" "$out"; fi
summary
