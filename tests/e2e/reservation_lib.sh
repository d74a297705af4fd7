# tests/e2e/reservation_lib.sh: helpers of the Reservation end-to-end tests (sourced after
# lib.sh and scheduler_lib.sh): the CRDs, node sets of their own, reservations and pods as JSON,
# and reads of a reservation's status.

# install_reservation_crds: the chart's Reservation and PodGroup CRDs (charts/tarema/crds, the
# real ones, never stand-ins), both established.
install_reservation_crds() {
  apply_shared -f "$REPO_ROOT/charts/tarema/crds/tarema.io_reservations.yaml" || return 1
  apply_shared -f "$REPO_ROOT/charts/tarema/crds/scheduling.x-k8s.io_podgroups.yaml" || return 1
  kubectl wait --for condition=established --timeout=30s crd/reservations.tarema.io crd/podgroups.scheduling.x-k8s.io >/dev/null
}

# rfc3339 SECONDS_FROM_NOW
rfc3339() { date -u -d "@$(($(date +%s) + $1))" +%Y-%m-%dT%H:%M:%SZ; }

# reservation_json NS NAME START_S END_S COUNT CPU SELECTOR_LABEL OWNER_JSON: a Reservation of
# COUNT pods of CPU cores between now+START_S and now+END_S on the nodes labelled
# tarema.io/e2e-set=SELECTOR_LABEL, for the scheduler named $SCHED.
reservation_json() {
  jq -cn --arg ns "$1" --arg name "$2" --arg st "$(rfc3339 "$3")" --arg en "$(rfc3339 "$4")" \
    --argjson count "$5" --arg cpu "$6" --arg set "$7" --argjson owner "$8" --arg sched "$SCHED" '
    {apiVersion: "tarema.io/v1alpha1", kind: "Reservation",
     metadata: {namespace: $ns, name: $name},
     spec: {startTime: $st, endTime: $en, count: $count,
            template: {requests: {cpu: $cpu, memory: "1Gi"}},
            nodeSelector: {"tarema.io/e2e-set": $set}, owner: $owner,
            schedulerName: $sched}}'
}

# set_pod_json NS NAME SCHED SET CPU LABELS_JSON ANNOTATIONS_JSON: a pod of CPU cores restricted
# to the node set SET.
set_pod_json() {
  jq -cn --arg ns "$1" --arg name "$2" --arg sched "$3" --arg set "$4" --arg cpu "$5" \
    --argjson labels "$6" --argjson ann "$7" '
    {apiVersion: "v1", kind: "Pod",
     metadata: {namespace: $ns, name: $name, labels: $labels, annotations: $ann},
     spec: {schedulerName: $sched, nodeSelector: {"tarema.io/e2e-set": $set},
            containers: [{name: "c", image: "busybox",
                          resources: {requests: {cpu: $cpu, memory: "1Gi"}}}]}}'
}

resv_phase() { kubectl get reservation -n "$1" "$2" -o jsonpath='{.status.phase}' 2>/dev/null; }
resv_message() { kubectl get reservation -n "$1" "$2" -o jsonpath='{.status.message}' 2>/dev/null; }
# Held node names, one a line, sorted.
resv_nodes() { read_jq '.status.nodes // [] | .[].name' kubectl get reservation -n "$1" "$2" -o json | sort; }
# holds_none NS NAME: the reservation was read and holds no node (a failed read is no "none").
holds_none() { local n; n=$(resv_nodes "$1" "$2") && [ -z "$n" ]; }
# Pods held in all.
resv_pods() { kubectl get reservation -n "$1" "$2" -o json 2>/dev/null | jq '[.status.nodes // [] | .[].pods] | add // 0'; }
# phase_is NS NAME PHASE...: the reservation's phase is one of PHASE..., from one read.
phase_is() {
  local ph p
  ph=$(resv_phase "$1" "$2")
  for p in "${@:3}"; do [ "$ph" = "$p" ] && return 0; done
  return 1
}
# reservation_events NS NAME REASON: how many events with that reason regard the reservation.
reservation_events() {
  kubectl get events.events.k8s.io -n "$1" -o json |
    jq --arg n "$2" --arg r "$3" '[.items[] | select(.regarding.kind == "Reservation" and .regarding.name == $n and .reason == $r)] | length'
}
is_bound() { [ -n "$(pod_node "$1" "$2")" ]; }
# not_bound NS POD: the pod was read and has no node (a failed read is not "not bound").
not_bound() { local n; n=$(pod_node "$1" "$2") && [ -z "$n" ]; }
# refused NS POD: the scheduler has tried the pod and said why not (PodScheduled False).
refused() {
  local s
  s=$(read_ok kubectl get pod -n "$1" "$2" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}') && [ "$s" = False ]
}
