#!/usr/bin/env bash
# tests/e2e/reservation_release_test.sh: every release path of a Reservation on the live
# scheduler, each on its own kwok nodes and each checked by the capacity coming free again (a
# pod of unknown expected end, kept off while the capacity is held, then bound):
#  1. the owner (a PodGroup) is deleted inside the window -> Released;
#  2. endTime passes -> Expired;
#  3. the reservation is deleted before its window -> the backfill rule no longer applies.
# (Release when the owner's pods finish: reservation_window_test.sh.)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

sched_e2e_begin resv-rel rr
check "Reservation and PodGroup CRDs installed" install_reservation_crds
sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<EOF2
nodes:
  - {prefix: ${P}b, count: 2, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "b$ID"}}
  - {prefix: ${P}c, count: 1, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "c$ID"}}
  - {prefix: ${P}d, count: 1, cpu: 2, memory: 8Gi, pods: 20, labels: {tarema.io/e2e-set: "d$ID"}}
EOF2
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
kubectl create -n "$NS" -f - >/dev/null <<EOF2
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pg-$ID}
spec: {minMember: 2}
EOF2
sched_e2e_start

NOBODY="{\"selector\":{\"matchLabels\":{\"nobody\":\"$ID\"}}}"
{
  reservation_json "$NS" by-owner 3 600 2 2 "b$ID" "{\"kind\":\"PodGroup\",\"name\":\"pg-$ID\"}"
  reservation_json "$NS" by-end 3 40 1 2 "c$ID" "$NOBODY"
  reservation_json "$NS" by-delete 300 900 1 2 "d$ID" "$NOBODY"
} >"$WORK/resv.json"
kubectl create -f "$WORK/resv.json" >/dev/null
# Admitted, or already past it (Active), both polled: `wait_for 30 phase_is ... Admitted ||
# phase_is ... Active` polled only Admitted, which lasts ~1.5-3 s here (by-owner's window opens
# 3 s after creation), so a slow poll could miss it and find Active only once, after the 30 s.
for r in by-owner by-end by-delete; do
  if wait_for 30 phase_is "$NS" "$r" Admitted Active; then pass "$r admitted"; else fail "$r admitted" "$(resv_phase "$NS" "$r"): $(resv_message "$NS" "$r")"; fi
done
{
  set_pod_json "$NS" sb1 "$SCHED" "b$ID" 2 '{}' '{}'
  set_pod_json "$NS" sb2 "$SCHED" "b$ID" 2 '{}' '{}'
  set_pod_json "$NS" sc "$SCHED" "c$ID" 2 '{}' '{}'
  set_pod_json "$NS" sd "$SCHED" "d$ID" 2 '{}' '{}'
} >"$WORK/pods.json"
kubectl create -f "$WORK/pods.json" >/dev/null
# no fixed sleep: kept off at every poll until the scheduler refused each (PodScheduled False)
all_off() { local p; for p in sb1 sb2 sc sd; do not_bound "$NS" "$p" || return 1; done; }
all_refused() { local p; for p in sb1 sb2 sc sd; do refused "$NS" "$p" || return 1; done; }
off_until_refused() {
  local deadline=$(($(date +%s) + 30))
  while :; do
    all_off || return 1
    all_refused && return 0
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
off_until_refused || fail "the scheduler refused sb1, sb2, sc and sd (PodScheduled False), none bound meanwhile" "$(kubectl get pods -n "$NS" -o wide 2>&1)"
for p in sb1 sb2 sc sd; do
  if not_bound "$NS" "$p"; then pass "$p (unknown expected end) kept off held capacity"; else fail "$p (unknown expected end) kept off held capacity" "node '$(pod_node "$NS" "$p" 2>&1)'"; fi
done

# ---- 1. owner deleted ----------------------------------------------------------------------------
check "by-owner active" wait_for 20 phase_is "$NS" by-owner Active
kubectl delete podgroups.scheduling.x-k8s.io -n "$NS" "pg-$ID" >/dev/null
if wait_for 20 phase_is "$NS" by-owner Released && [[ $(resv_message "$NS" by-owner) == *"owner was deleted"* ]] && holds_none "$NS" by-owner; then
  pass "owner deleted: Released, nothing held"
else
  fail "owner deleted: Released, nothing held" "$(kubectl get reservation -n "$NS" by-owner -o jsonpath='{.status}')"
fi
b_bound() { is_bound "$NS" sb1 && is_bound "$NS" sb2; }
if wait_for 30 b_bound; then pass "owner deleted: capacity free again"; else fail "owner deleted: capacity free again" "$(kubectl get pods -n "$NS" -o wide)"; fi

# ---- 3. reservation deleted (before its window) --------------------------------------------------
kubectl delete reservation -n "$NS" by-delete >/dev/null
if wait_for 30 is_bound "$NS" sd; then pass "reservation deleted: capacity free again"; else fail "reservation deleted: capacity free again" "$(kubectl get pods -n "$NS" -o wide)"; fi

# ---- 2. endTime ----------------------------------------------------------------------------------
if not_bound "$NS" sc; then pass "sc kept off until endTime"; else fail "sc kept off until endTime" "bound early or unread: node '$(pod_node "$NS" sc 2>&1)'"; fi
if wait_for 60 phase_is "$NS" by-end Expired && [[ $(resv_message "$NS" by-end) == *"endTime passed"* ]] && holds_none "$NS" by-end; then
  pass "endTime: Expired, nothing held"
else
  fail "endTime: Expired, nothing held" "$(kubectl get reservation -n "$NS" by-end -o jsonpath='{.status}')"
fi
if wait_for 30 is_bound "$NS" sc; then pass "endTime: capacity free again"; else fail "endTime: capacity free again" "$(kubectl get pods -n "$NS" -o wide)"; fi
for r in by-owner by-end; do
  reason=$([ "$r" = by-end ] && echo Expired || echo Released)
  if [ "$(reservation_events "$NS" "$r" "$reason")" -ge 1 ]; then pass "$r: $reason event"; else fail "$r: $reason event" "$(kubectl get events.events.k8s.io -n "$NS")"; fi
done
if out=$(check_fit) && [ -z "$out" ]; then pass "no node over its capacity"; else fail "no node over its capacity" "$out"; fi
summary
