#!/usr/bin/env bash
# deploy_demo_test.sh: `make demo` (hack/demo.sh) end to end with its own instance name: every
# step reports, tarema and kube-scheduler both bind all task pods, tarema puts the CPU-heavy
# BWA_MEM tasks (labels 3/3/x) on the strongest group, the simulator's makespans are printed,
# the offline steps show right-sizing, learned waits and the cluster ranking, and nothing of
# the demo is left running afterwards. Also: Ctrl-C (SIGINT) mid-run cleans up.
# The two demos run side by side (each its own cluster and PostgreSQL, by its name): the one
# interrupted once its cluster runs starts with the full one, whose checks follow (one after the
# other, the second cluster's start added some 25 s).
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
NAME=demo-e2e-$$
LOG=$(mktemp)
ILOG=$(mktemp)
trap 'for n in $NAME $NAME-i; do TAREMA_CLUSTER_NAME=$n bash "$REPO_ROOT/hack/cluster.sh" down >/dev/null 2>&1;
      TAREMA_PG_NAME=$n bash "$REPO_ROOT/hack/postgres.sh" down >/dev/null 2>&1; done; rm -f "$LOG" "$ILOG"' EXIT

# 3 seeds per setting for step 7's hack/sim-evaluate.py (the demo's 10 are a minute of CPU more): the
# table and the verdicts are checked, not the figures (tests/e2e/sim_evaluate_test.sh tests the tool).
DEMO_NAME=$NAME DEMO_EVAL_SEEDS=3 TAREMA_BIN=$BIN timeout 600 bash "$REPO_ROOT/hack/demo.sh" >"$LOG" 2>&1 &
full=$!

# Interrupted while the cluster runs: the trap still tears everything down.
# A background job of a script starts with SIGINT ignored (and bash cannot trap a signal
# ignored at entry), so restore the default disposition the way a terminal's foreground has it.
DEMO_NAME=$NAME-i TAREMA_BIN=$BIN setsid python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp("bash", ["bash"] + sys.argv[1:])' "$REPO_ROOT/hack/demo.sh" >"$ILOG" 2>&1 &
pid=$!
wait_for 120 grep -q '== 3/11' "$ILOG" || fail "demo reached step 3 for the interrupt test" "$(tail -n 5 "$ILOG")"
kill -INT -- -"$pid" 2>/dev/null
wait "$pid"
irc=$?
sleep 0.5
[ ! -d "$TAREMA_CACHE/clusters/$NAME-i" ] && grep -q interrupted "$ILOG" &&
  pass "Ctrl-C cleans up (exit $irc, cluster gone)" || fail "Ctrl-C cleans up" "exit $irc: $(tail -n 8 "$ILOG")"
TAREMA_CLUSTER_NAME=$NAME-i bash "$REPO_ROOT/hack/cluster.sh" down >/dev/null 2>&1
TAREMA_PG_NAME=$NAME-i bash "$REPO_ROOT/hack/postgres.sh" down >/dev/null 2>&1

wait "$full"
rc=$?
[ $rc = 0 ] && pass "hack/demo.sh exits 0" || fail "hack/demo.sh exits 0" "exit $rc: $(tail -n 15 "$LOG")"
for s in 1 2 3 4 5 6 7 8 9 10 11; do
  grep -q "== $s/11 " "$LOG" && pass "demo step $s/11 reported" || fail "demo step $s/11 reported"
done
grep -q 'running a real benchmark on this machine' "$LOG" && grep -q 'scaled by machine type' "$LOG" &&
  pass "demo says which profiles are measured and which are scaled" || fail "demo explains the scaled profiles"
grep -qE 'tarema bound [0-9]+ pods' "$LOG" && grep -qE 'kube-scheduler bound [0-9]+ pods' "$LOG" &&
  pass "both schedulers bound every task pod" || fail "both schedulers bound every task pod" "$(grep -i bound "$LOG")"
# Placement table rows: "  PROCESS  POD  c/m/i  NODE  (GROUP: ...)  NODE  (GROUP: ...)".
bwa_groups=$(awk '$1 == "BWA_MEM" && $2 ~ /^bwa-mem-/ {print $5}' "$LOG" | tr -d '(:' | sort -u)
strongest=$(grep -E '^[0-9]+ +[0-9]+ +[0-9]+ ' "$LOG" | awk '{print $1}' | sort -n | tail -n 1)
[ -n "$strongest" ] && [ "$bwa_groups" = "$strongest" ] &&
  pass "tarema put BWA_MEM (cpu/mem label 3) on the strongest group $strongest" ||
  fail "tarema placed BWA_MEM on the strongest group" "groups '$bwa_groups', strongest '$strongest': $(grep -E '^  (BWA_MEM|process) ' "$LOG")"
grep -qE 'urgent bound to demo-preempt' "$LOG" && grep -qE 'its event: "Preempted by pod [0-9a-f-]+ on node demo-preempt' "$LOG" &&
  pass "demo shows preemption: the urgent pod evicts the batch pod and lands" ||
  fail "demo shows preemption" "$(grep -A 3 'priority and preemption' "$LOG")"
grep -q 'step b (proactive): predecessors started' "$LOG" &&
  pass "demo shows a proactive step released when its predecessor started" ||
  fail "demo shows release on start" "$(grep -A 8 'released when its predecessor starts' "$LOG")"
grep -q 'step b (proactive): the release lead before' "$LOG" &&
  pass "demo shows a proactive step released by the release lead (before its predecessor started)" ||
  fail "demo shows the release lead" "$(grep -A 8 'with --release-lead 8s' "$LOG")"
grep -q 'tarema-scheduler explain' "$LOG" && grep -q 'bound to:' "$LOG" && pass "demo shows the labels behind a decision (explain)" ||
  fail "demo shows explain output"
grep -q 'mean makespan per workflow' "$LOG" && grep -qE '^ +chipseq +[0-9.]+ +[0-9.]+' "$LOG" &&
  pass "demo prints simulated makespans" || fail "demo prints simulated makespans"
grep -qE '^  \| 5;4;4;2, shared \| .* \| [0-9.-]+ / [0-9.-]+ \| (met|missed: .*) \|$' "$LOG" && grep -qE '^  target .*: met in [0-4] of 4 settings$' "$LOG" &&
  grep -qE 'figure \(adaptive, headroom and target per setting\): /tmp/tarema-demo\.[^/ ]+/sim-evaluate\.svg' "$LOG" &&
  grep -q '\[4/4\] 5;4;4;2, shared: 3 seeds' "$LOG" &&
  pass "demo checks issue 16's target per setting (hack/sim-evaluate.py, all 4 settings, DEMO_EVAL_SEEDS=3)" ||
  fail "demo checks issue 16's target" "$(grep -A 9 'sim-evaluate' "$LOG")"
# Backfill in the simulation step: the four disciplines' rows and the figure; EASY and
# conservative backfilled something, strict FIFO nothing (last column).
grep -qE '^  first-fit +[0-9.]+ ' "$LOG" && grep -qE '^  fifo +([0-9.]+ +){7}0$' "$LOG" &&
  grep -qE '^  easy +([0-9.]+ +){7}[1-9][0-9]*$' "$LOG" && grep -qE '^  conservative +([0-9.]+ +){7}[1-9][0-9]*$' "$LOG" &&
  grep -qE 'figure \(utilisation and waits per discipline\): /tmp/tarema-demo\.[^/ ]+/backfill\.svg' "$LOG" &&
  pass "demo shows backfill against first fit and FIFO (tarema-sim backfill, figure)" ||
  fail "demo shows backfill" "$(grep -A 8 'tarema-sim backfill' "$LOG")"
# The live queue after it: the gang larger than the cluster still waits there, as one row.
grep -qE '^  POSITION +NAMESPACE/NAME +PRIORITY +GANG +EXPECTED START +NODES +WHY$' "$LOG" &&
  grep -qE '^  [0-9]+ +demo-[a-z-]+/huge-[0-9]+ \+39 .* podgroup/huge ' "$LOG" &&
  pass "demo shows the live queue (tarema-scheduler queue): the huge gang as one row" ||
  fail "demo shows the live queue (tarema-scheduler queue)" "$(grep -A 8 'tarema-scheduler queue' "$LOG")"
# Steps 8-10: the tools' own tables, indented by the demo.
grep -qE '^ +whole-machine +- +[0-9.]+% +[0-9.]+%' "$LOG" && grep -qE '^ +kmeans +3 +-?[0-9.]+% +[0-9.]+%' "$LOG" &&
  grep -qE '^ +BWA_MEM +[0-9]+ +[0-9.]+G [0-9. ]+ +[0-9.]+G' "$LOG" &&
  pass "demo shows right-sizing: WRR/ATE of whole machine and k-means, allocation per process" ||
  fail "demo shows right-sizing" "$(grep -A 8 '== 8/11' "$LOG")"
# The webhook's /mutate is authenticated, and the API server's calls (its client certificate)
# are answered: the task pods' memory requests are set.
grep -q 'POST /mutate without credentials: HTTP 401' "$LOG" &&
  [ "$(awk '/^  process +cpu +memory +mem limit/ {t = 1; next} t && NF == 4 && $3 ~ /[0-9](Mi|Gi|M|G)$/ {n++} t && NF != 4 {t = 0} END {print n + 0}' "$LOG")" = 4 ] &&
  pass "demo: /mutate refuses a request without credentials and sizes the 4 task pods the API server sends" ||
  fail "demo: authenticated webhook sizes the task pods" "$(grep -B 2 -A 6 'POST /mutate' "$LOG")"
grep -qE '^ +800-999 +[0-9]+ +[0-9]+ +[0-9.]+%' "$LOG" && grep -qE '^ +all +[0-9.]+%' "$LOG" &&
  grep -qE 'figure \(true wait and estimate\): /tmp/tarema-demo\.[^/ ]+/asa-figure5\.svg' "$LOG" &&
  pass "demo shows ASA hit ratios per segment and where the figure is" ||
  fail "demo shows ASA hit ratios" "$(grep -A 12 '== 9/11' "$LOG")"
grep -qE '^ +chosen: [a-z0-9-]+$' "$LOG" && grep -qE '^ +1 +[a-z0-9-]+ +[0-9.]+ ' "$LOG" &&
  grep -q 'excluded gone: unreachable' "$LOG" && grep -qE '^ +greedy +[0-9.]+ +[0-9.]+' "$LOG" &&
  grep -q 'simulation jobs per HPC cluster (greedy)' "$LOG" &&
  pass "demo shows the cluster ranking and the federation summary" ||
  fail "demo shows the cluster ranking" "$(grep -A 20 '== 10/11' "$LOG")"
grep -qE '^ +step LES starts at \+[0-9:]+ on ' "$LOG" && grep -qE '^ +step HPDA starts at ' "$LOG" &&
  grep -qE '^ +makespan [0-9:]+ .*solver (ilp|heuristic)' "$LOG" &&
  pass "demo shows the planner's plan (steps, nodes, makespan, solver)" ||
  fail "demo shows the planner's plan" "$(grep -A 8 '== 11/11' "$LOG")"
grep -qE '^ +workflow demo-planner/e2e: Succeeded' "$LOG" && grep -qE '^ +sim +Succeeded ' "$LOG" &&
  pass "demo runs a workflow through the planner's controller to Succeeded" ||
  fail "demo runs a workflow through the planner's controller" "$(grep -A 30 '== 11/11' "$LOG" | tail -n 15)"
# its three steps' Reservations, admitted by tarema-scheduler, are released once each step ended
[ "$(grep -cE '^ +e2e-(prep|sim|post) +Released ' "$LOG")" = 3 ] &&
  pass "demo: tarema-scheduler admitted and released each step's Reservation" ||
  fail "demo: each step's Reservation admitted and released" "$(grep -A 40 '== 11/11' "$LOG" | tail -n 8)"
[ ! -d "$TAREMA_CACHE/clusters/$NAME" ] && pass "demo cluster torn down on exit" || fail "demo cluster torn down on exit"
grep -q "PostgreSQL '$NAME' stopped" "$LOG" && pass "demo PostgreSQL torn down on exit" || fail "demo PostgreSQL torn down"

summary
