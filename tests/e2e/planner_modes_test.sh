#!/usr/bin/env bash
# planner_modes_test.sh: the step modes of `tarema-planner run` (docs/planner.md, Step modes) on
# the real control plane (own namespace, 4 own kwok nodes, kube-scheduler binding) and
# PostgreSQL (the learned waits, $DATABASE_URL): a 2-step workflow in proactive mode whose second
# step's shape has a learned wait of 15 s:
#  1. status: both steps proactive, the second with estimateSeconds 15 from the learned waits,
#     a predicted start and ungateAt = the first step's predicted end - 15 s;
#  2. the second step's planner gate goes while the first step still runs (before its end, by
#     the estimate), its order gate stays, and it does not bind until the first one succeeded;
#  3. the workflow succeeds; the second step started after the first one ended;
#  4. alongside, a 2-step workflow in on-completion mode: the second step keeps the planner's
#     gate until the first succeeded; no Reservation for either mode.
# Sections 1-6 run the planner with --release-on-start false (ASA's rule alone); section 7
# restarts it with the default: the second step is released once the first has started (ASA's
# point, written as tarema.io/asa-release-at, being later), held by the order gate with
# tarema.io/not-before, and it binds only after the first one succeeded. Section 8 restarts it
# with --release-lead 60s: the last step of three is released at submission, long before its
# predecessor starts.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/planner_lib.sh"
trap planner_cleanup EXIT
W=$PL_LOG_DIR

if [ -z "${DATABASE_URL:-}" ]; then
  fail "DATABASE_URL set (eval hack/postgres.sh env)" "not set"
  summary
  exit 1
fi
if ! out=$(planner_setup 2>&1); then
  fail "set-up: namespace, nodes, CRDs, kube-scheduler" "$out"
  summary
  exit 1
fi

# The learned wait of step b's shape (1 pod, 1 core, 512 MiB): a learner state whose most
# probable alternative is 15 s. `tarema-planner waits` first: it applies the migrations.
"$BIN/tarema-planner" waits --db "$DATABASE_URL" >/dev/null 2>&1
python3 - "$W/state.json" <<'PY'
import json, sys
alts = [10,15,20,25,30,35,40,45,50,55,60,65,70,75,80,85,90,100,150,200,250,300,350,400,450,500,
        550,600,650,700,750,800,850,900,1000,2000,3000,4000,5000,6000,7000,8000,9000,10000,20000,
        30000,40000,50000,60000,70000,80000,90000,100000]
p = [0.5 / (len(alts) - 1)] * len(alts)
p[alts.index(15)] = 0.5
json.dump({"version": 1, "alternatives_s": alts, "round": 6, "cases": 5, "samples": 5, "p": p,
           "round_loss": [0] * len(alts),
           "stats": {"observations": 5, "scored": 4, "hits": 4, "overs": 0, "over_s": 0,
                     "under_s": 0, "wait_min_s": 14, "wait_max_s": 16, "wait_sum_s": 75,
                     "last_wait_s": 15, "last_estimate_s": 15}}, open(sys.argv[1], "w"))
PY
check "learned wait of step b's shape stored" psql "$DATABASE_URL" -qAtc \
  "INSERT INTO asa_waits (namespace, node_group, pods, cpu_milli, memory_bytes, state, estimate_s, observations)
   VALUES ('$NS', '', 1, 1000, 536870912, \$\$$(cat "$W/state.json")\$\$, 15, 5)"
check "tarema-planner waits reads it as 15 s" bash -c \
  "'$BIN/tarema-planner' waits --db '$DATABASE_URL' --namespace '$NS' --json | jq -e '.shapes[0].estimate_s == 15'"

planner_start --leader-elect false --db "$DATABASE_URL" --release-on-start false
kubectl apply -n "$NS" -f - >/dev/null <<Y
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: pro}
spec:
  steps:
    - {name: a, mode: proactive, pods: 1, requests: {cpu: 1, memory: 1Gi}, duration: 30s,
       image: a:1, annotations: {tarema.io/duration: 25s}}
    - {name: b, mode: proactive, after: [a], pods: 1, requests: {cpu: 1, memory: 512Mi},
       duration: 10s, image: b:1, annotations: {tarema.io/duration: 5s}}
---
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: onc}
spec:
  steps:
    - {name: a, mode: on-completion, pods: 1, requests: {cpu: 1, memory: 1Gi}, duration: 20s,
       image: a:1, annotations: {tarema.io/duration: 12s}}
    - {name: b, mode: on-completion, after: [a], pods: 1, requests: {cpu: 1, memory: 256Mi},
       duration: 10s, image: b:1, annotations: {tarema.io/duration: 3s}}
---
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: late}
spec:
  steps:
    - {name: a, mode: proactive, pods: 1, requests: {cpu: 1, memory: 1Gi}, duration: 40s,
       image: a:1, annotations: {tarema.io/duration: 35s}}
    - {name: b, mode: proactive, after: [a], pods: 1, requests: {cpu: 1, memory: 768Mi},
       duration: 10s, image: b:1, annotations: {tarema.io/duration: 3s}}
Y

# samples every 0.5 s until the workflow ends: time, a's phase, b's gates and node. Both pods
# come from one list, one snapshot of the API server: two separate gets let a succeed, b's order
# gate go and b bind between the reads, and a sample then showed "a Running, b bound" although b
# started after a ended (a CI run saw it once).
sample() {
  local wf=$1 out a b
  while ! wf_phase_is "$wf" Succeeded && ! wf_phase_is "$wf" Failed; do
    out=$(kubectl -n "$NS" get pods -l "planner.tarema.io/workflow=$wf" -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}={range .spec.schedulingGates[*]}{.name},{end}|{.spec.nodeName}{"\n"}{end}' 2>/dev/null)
    a=$(sed -n "s/^$wf-a-0=\([^=]*\)=.*/\1/p" <<<"$out")
    b=$(sed -n "s/^$wf-b-0=[^=]*=//p" <<<"$out")
    echo "$(date +%s) ${a:-none} ${b:-none}"
    sleep 0.5
  done
}
export NS
export -f kwf wf_phase_is
# The phases overlap: pro and onc run (sampled in the background) while section 5's "late"
# (submitted with them: its a runs 35 s) and section 6's "ovr" are checked in the foreground;
# their checks are section 1-4's once both samplers ended. Each workflow has its own pods and
# step shapes (pro's and ovr's b share the learned 512 MiB shape, which neither changes), and
# the 4 nodes hold all of their 1-core pods at once; run one after the other they took some
# 40 s more (ovr alone waits ~20 s, late ~45 s).
timeout 120 bash -c "$(declare -f sample); sample onc" >"$W/samples-onc.txt" &
onc_pid=$!
timeout 120 bash -c "$(declare -f sample); sample pro" >"$W/samples.txt" &
pro_pid=$!

# ---- 5. the estimate follows the learner until the step is released ---------------------------
# b's shape (768 MiB) has no learned wait when the workflow is planned; one is learned while a
# runs. b must be released with it (before the fix: the estimate read at the first plan, the
# default 0 s, for the whole chain).
b_source() { kubectl -n "$NS" get workflow late -o json | jq -r '.status.steps[]? | select(.name == "b") | "\(.estimateSource // "")/\(.estimateSeconds // "")"'; }
b_is() { [ "$(b_source)" = "$1" ]; }
check "late: b planned with the default estimate first" wait_for 30 b_is default/0
psql "$DATABASE_URL" -qAtc \
  "INSERT INTO asa_waits (namespace, node_group, pods, cpu_milli, memory_bytes, state, estimate_s, observations)
   VALUES ('$NS', '', 1, 1000, 805306368, \$\$$(cat "$W/state.json")\$\$, 15, 5)" >/dev/null
check "late: b's estimate follows the learner while it is not released (learned/15)" \
  wait_for 20 b_is learned/15

# ---- 6. a predecessor that overruns: predicted starts never lie in the past ---------------------
# a is planned for 3 s and runs 12 s. b (proactive, learned 15 s) is ungated at once and waits at
# the order gate; c (on-completion) waits for b. While a overruns, both predictions follow a's
# expected end (replan.h: as long again as it has overrun). Before the fix c was predicted at
# a's planned end, in the past (seen: 3 s before now, 5 s into the overrun); a released b kept
# the prediction it was ungated with.
kubectl apply -n "$NS" -f - >/dev/null <<Y
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: ovr}
spec:
  steps:
    - {name: a, mode: on-completion, pods: 1, requests: {cpu: 1, memory: 1Gi}, duration: 3s,
       image: a:1, annotations: {tarema.io/duration: 12s}}
    - {name: b, mode: proactive, after: [a], pods: 1, requests: {cpu: 1, memory: 512Mi},
       duration: 3s, image: b:1, annotations: {tarema.io/duration: 2s}}
    - {name: c, mode: on-completion, after: [b], pods: 1, requests: {cpu: 1, memory: 256Mi},
       duration: 3s, image: c:1, annotations: {tarema.io/duration: 2s}}
Y
a_started() { [ -n "$(kwf ovr '.status.steps[?(@.name=="a")].actualStart')" ]; }
export -f a_started
if wait_for 30 a_started; then
  a_start=$(date -d "$(kwf ovr '.status.steps[?(@.name=="a")].actualStart')" +%s)
  sleep $((a_start + 8 - $(date +%s) > 0 ? a_start + 8 - $(date +%s) : 0)) # 5 s past a's 3 s
  now=$(date +%s)
  ps_of() { date -d "$(kwf ovr "$(printf '.status.steps[?(@.name=="%s")].predictedStart' "$1")")" +%s 2>/dev/null || echo 0; }
  # a's phase first: read after the two predictions (two more gets, slow under load) it could
  # come after a had ended (at 12 s, 4 s after this sample is due) and fail the check although
  # the predictions were read while a overran.
  phase_a=$(kubectl -n "$NS" get pod ovr-a-0 -o jsonpath='{.status.phase}')
  pb=$(ps_of b) pc=$(ps_of c)
  check "overrun: b (released, at the order gate) and c predicted no earlier than now, 5 s into a's overrun" \
    bash -c "[ '$phase_a' = Running ] && [ $pb -ge $((now - 1)) ] && [ $pc -ge $((now - 1)) ] || { echo 'a $phase_a, now $now, b $pb, c $pc'; exit 1; }"
  # b's pod, held at the order gate, says when it may start (tarema.io/not-before, for the
  # scheduler's backfill plan: docs/backfill.md): b's predicted start, moved by the overrun past
  # a's planned end too (rewritten when it moved by 5 s, a tick after the prediction: within 6 s)
  nb_matches() {
    local nb nbs p
    nb=$(kubectl -n "$NS" get pod ovr-b-0 -o jsonpath='{.metadata.annotations.tarema\.io/not-before}' 2>/dev/null)
    nbs=$(date -d "$nb" +%s 2>/dev/null) || return 1
    p=$(ps_of b)
    [ "$nbs" -gt $((a_start + 3)) ] && [ $((nbs - p)) -le 6 ] && [ $((p - nbs)) -le 6 ]
  }
  if wait_for 5 nb_matches; then pass "overrun: b's held pod carries tarema.io/not-before = its predicted start, past a's planned end"; else
    fail "overrun: b's held pod carries tarema.io/not-before = its predicted start" "not-before '$(kubectl -n "$NS" get pod ovr-b-0 -o jsonpath='{.metadata.annotations.tarema\.io/not-before}')', predicted $(ps_of b), sampled at $now"
  fi
else
  fail "overrun: a started" "$(kwf ovr .status)"
fi
check "overrun: workflow Succeeded" wait_for 60 wf_phase_is ovr Succeeded

# ---- 5 (end). late ends: its b was released with the learned estimate
check "late: workflow Succeeded" wait_for 90 wf_phase_is late Succeeded
check "late: b released with the learned estimate" b_is learned/15
"$BIN/tarema-planner" show late -n "$NS" >"$W/show-late.txt" 2>&1
check "show: mode and the estimate used per step" \
  grep -qE '^b +Succeeded +proactive .* 15s learned ' "$W/show-late.txt"

# ---- 1-4. pro and onc, from the samples
wait "$pro_pid" "$onc_pid" # not a bare wait: the planner runs in the background too
wf_json pro >"$W/wf.json"
check "workflow Succeeded" wf_phase_is pro Succeeded
check "status: modes, learned estimate, ungateAt = a's predicted end - 15 s" python3 - "$W/wf.json" <<'PY'
import json, sys, datetime
st = {s["name"]: s for s in json.load(open(sys.argv[1]))["status"]["steps"]}
t = lambda v: datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ").timestamp()
a, b = st["a"], st["b"]
assert a["mode"] == "proactive" and b["mode"] == "proactive", (a, b)
assert b["estimateSeconds"] == 15 and b["estimateSource"] == "learned", b
assert "predictedStart" in b and "ungateAt" in b, b
# a's predicted end when b was ungated: its actual start + duration, or its planned end
end_a = max(t(a["end"]), t(a["actualStart"]) + 30)
assert abs(t(b["ungateAt"]) - (end_a - 15)) <= 2, (b["ungateAt"], end_a)
assert t(b["predictedStart"]) >= t(b["ungateAt"]) + 15 - 1, b
PY
check "b's planner gate removed while a still ran, its order gate kept" python3 - "$W/samples.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
early = [r for r in rows if r[1] == "Running" and "tarema.io/planned" not in r[2] and r[2] != "none"]
assert early, "no sample with a Running and b's planner gate gone"
assert all("tarema.io/after-predecessors" in r[2] for r in early), early[:3]
# and by about the estimate before a ended (a runs 25 s; b ungated at a's predicted end - 15 s)
first_ungated = int(early[0][0])
a_done = min((int(r[0]) for r in rows if r[1] == "Succeeded"), default=None)
assert a_done is not None, "a never Succeeded in the samples"
assert a_done - first_ungated >= 5, (first_ungated, a_done)
print(f"b ungated {a_done - first_ungated} s before a succeeded")
PY
check "b never bound before a succeeded" python3 - "$W/samples.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
bad = [r for r in rows if r[1] != "Succeeded" and not r[2].endswith("|") and r[2] != "none"]
assert not bad, bad[:3]
PY
check "b started after a ended" bash -c "
  ae=\$(kubectl -n $NS get pod pro-a-0 -o jsonpath='{.status.containerStatuses[0].state.terminated.finishedAt}')
  bs=\$(kubectl -n $NS get pod pro-b-0 -o jsonpath='{.status.startTime}')
  [ -n \"\$ae\" ] && [ -n \"\$bs\" ] && [ \"\$(date -d \"\$bs\" +%s)\" -ge \"\$(date -d \"\$ae\" +%s)\" ]"
check "no Reservation for proactive steps" test "$(nobj reservations planner.tarema.io/workflow=pro)" = 0

# ---- 4. on-completion ------------------------------------------------------------------------
check "on-completion workflow Succeeded" wf_phase_is onc Succeeded
check "on-completion: status shows the mode" bash -c \
  "[ \"\$(kubectl -n $NS get workflow onc -o jsonpath='{.status.steps[*].mode}')\" = 'on-completion on-completion' ]"
check "on-completion: b gated by the planner until a succeeded" python3 - "$W/samples-onc.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
running = [r for r in rows if r[1] == "Running"]
assert running, "no sample with a Running"
assert all(r[2].startswith("tarema.io/planned,|") for r in running), running[:3]
assert any(r[1] == "Succeeded" and "tarema.io/planned" not in r[2] for r in rows), rows[-3:]
PY
check "no Reservation for on-completion steps" test "$(nobj reservations planner.tarema.io/workflow=onc)" = 0

# ---- 7. release on start (the default) ------------------------------------------------------
# a runs 20 s, b's shape has no learned wait (ASA's point would be a's predicted end): b is
# released when a has started, held by the order gate with a's expected end as its not-before,
# and binds only after a succeeded.
planner_stop
planner_start --leader-elect false --db "$DATABASE_URL"
kubectl apply -n "$NS" -f - >/dev/null <<Y
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: ros}
spec:
  steps:
    - {name: a, mode: proactive, pods: 1, requests: {cpu: 1, memory: 1Gi}, duration: 25s,
       image: a:1, annotations: {tarema.io/duration: 20s}}
    - {name: b, mode: proactive, after: [a], pods: 1, requests: {cpu: 1, memory: 640Mi},
       duration: 10s, image: b:1, annotations: {tarema.io/duration: 3s}}
Y
timeout 120 bash -c "$(declare -f sample); sample ros" >"$W/samples-ros.txt" &
ros_pid=$!
b_released() { [ -n "$(kwf ros '.status.steps[?(@.name=="b")].releasedAt')" ]; }
b_not_before() { [ -n "$(kubectl -n "$NS" get pod ros-b-0 -o jsonpath='{.metadata.annotations.tarema\.io/not-before}' 2>/dev/null)" ]; }
export -f b_released b_not_before
check "release on start: b released" wait_for 40 b_released
# the not-before is written a tick after the release (mark_not_before)
check "release on start: b's pod gets its not-before" wait_for 10 b_not_before
check "release on start: released at a's start, held by the order gate until a's expected end" \
  python3 - "$NS" <<'PY'
import json, subprocess, sys, datetime
ns = sys.argv[1]
t = lambda v: datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ").timestamp()
get = lambda *a: json.loads(subprocess.check_output(["kubectl", "-n", ns, "get", "-o", "json", *a]))
st = {s["name"]: s for s in get("workflow", "ros")["status"]["steps"]}
a, b = st["a"], st["b"]
assert b["estimateSeconds"] == 0 and b["estimateSource"] == "default", b
# released at a's start (within the planner's tick and the API's whole seconds), long before
# ASA's point (a's predicted end: start + 25 s)
assert abs(t(b["ungateAt"]) - t(a["actualStart"])) <= 2, (b["ungateAt"], a["actualStart"])
assert t(b["releasedAt"]) <= t(a["actualStart"]) + 10, (b["releasedAt"], a["actualStart"])
assert "actualEnd" not in a, a  # released while a ran
pod = get("pod", "ros-b-0")
gates = [g["name"] for g in pod["spec"].get("schedulingGates", [])]
assert gates == ["tarema.io/after-predecessors"], gates
ann = pod["metadata"]["annotations"]
nb = t(ann["tarema.io/not-before"])
assert abs(nb - (t(a["actualStart"]) + 25)) <= 6, (nb, a["actualStart"])
# ASA's point (a's predicted end minus the default 0 s), for the waits feed
assert abs(t(ann["tarema.io/asa-release-at"]) - nb) <= 6, ann
PY
check "release on start: the Released event says why" bash -c \
  "kubectl -n $NS get events --field-selector involvedObject.name=ros,reason=Released -o jsonpath='{.items[*].message}' | qgrep 'step b (proactive): predecessors started'"
check "release on start: workflow Succeeded" wait_for 90 wf_phase_is ros Succeeded
wait "$ros_pid"
check "release on start: b never bound before a succeeded" python3 - "$W/samples-ros.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 3]
assert any(r[1] == "Running" for r in rows), "no sample with a Running"
bad = [r for r in rows if r[1] != "Succeeded" and not r[2].endswith("|") and r[2] != "none"]
assert not bad, bad[:3]
PY

# ---- 8. a release lead (--release-lead 60s) ----------------------------------------------------
# z (15 s) -> a (10 s) -> b: a's predicted end is 25 s after submission, less than the lead, so b
# is released at submission, long before a starts (without the lead: at a's start, release on
# start, or at a's end, ASA's point with no learned wait), held by the order gate with a's
# expected end as its not-before (docs/asa.md, "A release lead").
planner_stop
planner_start --leader-elect false --db "$DATABASE_URL" --release-lead 60s
kubectl apply -n "$NS" -f - >/dev/null <<Y
apiVersion: tarema.io/v1alpha1
kind: Workflow
metadata: {name: lead}
spec:
  steps:
    - {name: z, mode: proactive, pods: 1, requests: {cpu: 1, memory: 1Gi}, duration: 15s,
       image: z:1, annotations: {tarema.io/duration: 12s}}
    - {name: a, mode: proactive, after: [z], pods: 1, requests: {cpu: 1, memory: 1Gi},
       duration: 10s, image: a:1, annotations: {tarema.io/duration: 3s}}
    - {name: b, mode: proactive, after: [a], pods: 1, requests: {cpu: 1, memory: 640Mi},
       duration: 10s, image: b:1, annotations: {tarema.io/duration: 3s}}
Y
lead_b_released() { [ -n "$(kwf lead '.status.steps[?(@.name=="b")].releasedAt')" ]; }
lead_a_started() { [ -n "$(kwf lead '.status.steps[?(@.name=="a")].actualStart')" ]; }
lead_b_not_before() { [ -n "$(kubectl -n "$NS" get pod lead-b-0 -o jsonpath='{.metadata.annotations.tarema\.io/not-before}' 2>/dev/null)" ]; }
export -f lead_b_released lead_a_started lead_b_not_before
check "release lead: b released" wait_for 40 lead_b_released
check "release lead: b's pod gets its not-before" wait_for 10 lead_b_not_before
check "release lead: the Released event says why" bash -c \
  "kubectl -n $NS get events --field-selector involvedObject.name=lead,reason=Released -o jsonpath='{.items[*].message}' | qgrep 'step b (proactive): the release lead'"
check "release lead: a starts (z ended)" wait_for 60 lead_a_started
check "release lead: b released at submission, long before a started; its not-before a's end" python3 - "$NS" <<'PY'
import json, subprocess, sys, datetime
ns = sys.argv[1]
t = lambda v: datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ").timestamp()
get = lambda *a: json.loads(subprocess.check_output(["kubectl", "-n", ns, "get", "-o", "json", *a]))
wf = get("workflow", "lead")
st = {s["name"]: s for s in wf["status"]["steps"]}
a, b = st["a"], st["b"]
created = t(wf["metadata"]["creationTimestamp"])
assert abs(t(b["ungateAt"]) - created) <= 1, (b["ungateAt"], wf["metadata"]["creationTimestamp"])
assert t(b["releasedAt"]) + 8 < t(a["actualStart"]), (b["releasedAt"], a["actualStart"])
pod = get("pod", "lead-b-0")
nb = t(pod["metadata"]["annotations"]["tarema.io/not-before"])
assert created + 15 <= nb <= created + 45, (nb - created)
PY
check "release lead: workflow Succeeded" wait_for 90 wf_phase_is lead Succeeded

summary
