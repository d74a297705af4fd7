#!/usr/bin/env bash
# tests/e2e/scheduler_late_crd_test.sh: CRDs installed after tarema-scheduler started (the
# planner's chart installed later, an operator applying the PodGroup CRD). The scheduler starts
# with the PodGroup and Reservation CRDs absent (this test deletes them), then they are applied
# from charts/tarema/crds/: within a few re-check intervals (TAREMA_API_RECHECK_MS=1000 here,
# 30 s by default) the scheduler watches them, so
#  1. a gang of 2 created while the PodGroup API was absent binds whole once its PodGroup exists
#  2. a Reservation created after the CRD appeared is admitted
#  3. each API's appearance is logged once ("... served now")
# The CRDs are applied again on exit, as the other tests expect them.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): deletes the PodGroup and Reservation CRDs other tests use
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"
. "$(dirname "$0")/gang_lib.sh"
. "$(dirname "$0")/reservation_lib.sh"

sched_e2e_begin latecrd lc
SET=lc$ID
PG_CRD=podgroups.scheduling.x-k8s.io
RESV_CRD=reservations.tarema.io
extra_cleanup() { install_reservation_crds >/dev/null 2>&1 || true; }

served() { kubectl api-resources --api-group="$1" -o name 2>/dev/null | qgrep -x "$2"; }
not_served() { ! served "$@"; }
kubectl delete crd "$PG_CRD" "$RESV_CRD" --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
if wait_for 30 not_served scheduling.x-k8s.io "$PG_CRD" && wait_for 30 not_served tarema.io "$RESV_CRD"; then
  pass "the PodGroup and Reservation APIs are not served before the scheduler starts"
else
  fail "the PodGroup and Reservation APIs are not served before the scheduler starts" "$(kubectl get crd 2>&1)"
  summary
  exit 1
fi

sched_e2e_namespace
cat >"$WORK/nodes.yaml" <<YAML
nodes:
  - {prefix: $P, count: 2, cpu: 4, memory: 8Gi, pods: 20,
     labels: {tarema.io/e2e-set: "$SET", tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2",
              tarema.io/group: "$P"}}
YAML
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"

if ! TAREMA_API_RECHECK_MS=1000 start_scheduler "$WORK/sched.log" --scheduler-name "$SCHED"; then
  fail "tarema-scheduler starts without the CRDs" "$(tail -n 5 "$WORK/sched.log")"
  summary
  exit 1
fi
pass "tarema-scheduler starts without the CRDs"
if grep -q "PodGroup API .* not served" "$WORK/sched.log" && grep -q "Reservation API .* not served" "$WORK/sched.log"; then
  pass "both APIs logged as not served at start"
else
  fail "both APIs logged as not served at start" "$(grep -i 'served\|reservations' "$WORK/sched.log")"
fi

# ---- 1. a gang whose pods came before the PodGroup API ------------------------------------------
export GANG_POD_PATCH=".spec.nodeSelector = {\"tarema.io/e2e-set\": \"$SET\"}"
gang_pods_json podgroup "$NS" g2 1 2 "$SCHED" >"$WORK/pods.json"
gang_group_json podgroup "$NS" g2 2 >"$WORK/pg.json"
check "gang pods created while the PodGroup API is absent" kubectl create -f "$WORK/pods.json"
# No event closes "not bound" while the API is absent: the negative holds at every poll for 2 s,
# and a failed read of the pods is not taken for "0 bound".
g2_unbound() { local c; c=$(gang_counts "$NS") && [ "$(awk '$1 == "pg:g2" {print $2; f = 1} END {if (!f) print 0}' <<<"$c")" = 0 ]; }
if always_for 2 g2_unbound; then pass "no member bound without its PodGroup"; else fail "no member bound without its PodGroup" "$(gang_counts "$NS" 2>&1)"; fi

check "PodGroup and Reservation CRDs applied from charts/tarema/crds" install_reservation_crds
T0=$(date +%s)
check "PodGroup g2 (minMember 2) created" kubectl create -f "$WORK/pg.json"
if gang_wait_bound "$NS" pg:g2 2 20; then
  pass "the gang of 2 binds whole after the PodGroup CRD appeared ($(($(date +%s) - T0)) s)"
else
  fail "the gang of 2 binds whole after the PodGroup CRD appeared" "$(gang_counts "$NS"; kubectl get pods -n "$NS" -o wide; tail -n 5 "$WORK/sched.log")"
fi

# ---- 2. a Reservation after the Reservation API appeared ----------------------------------------
OWNER="{\"selector\":{\"matchLabels\":{\"step\":\"late-$ID\"}}}"
reservation_json "$NS" late 120 720 1 1 "$SET" "$OWNER" >"$WORK/resv.json"
check "Reservation created" kubectl create -f "$WORK/resv.json"
if wait_for 20 phase_is "$NS" late Admitted; then
  pass "the Reservation is admitted"
else
  fail "the Reservation is admitted" "phase '$(resv_phase "$NS" late)': $(resv_message "$NS" late); $(grep -i 'reserv' "$WORK/sched.log" | tail -n 5)"
fi

# ---- 3. logged once each -------------------------------------------------------------------------
n_pg=$(grep -c "PodGroup API .* served now" "$WORK/sched.log")
n_rs=$(grep -c "Reservation API .* served now" "$WORK/sched.log")
if [ "$n_pg" = 1 ] && [ "$n_rs" = 1 ]; then
  pass "each API's appearance logged once"
else
  fail "each API's appearance logged once" "PodGroup $n_pg, Reservation $n_rs: $(grep 'served' "$WORK/sched.log")"
fi
if kill -0 "$SCHED_PID" 2>/dev/null; then pass "the scheduler still runs"; else fail "the scheduler still runs" "$(tail -n 5 "$WORK/sched.log")"; fi

summary
