#!/usr/bin/env bash
# profiler_apply_test.sh: `tarema-profiler group`, `apply` and `run` against the local control
# plane's kwok nodes (default node file: the paper's 5;4;4;2 cluster, e2/n1/n2/c2 machines).
#
# kwok nodes are API objects: no container ever runs on them, so no benchmark can run "on" a
# node. This test stands in for the node side honestly: it runs one real `bench --quick` on
# this machine, and makes each node's NodeProfile with `bench` over the tools' recorded output
# replayed at Table IV-shaped figures for its machine type (label tarema.io/machine-type). For `run`, it publishes those profiles to the
# ConfigMaps the node-side Job would write (one of them through a real `bench --publish`),
# while `run` waits for them.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): strips the tarema.io node labels of every node
set -uo pipefail
. "$(dirname "$0")/lib.sh"
P="$BIN/tarema-profiler"
WORK=$(mktemp -d)
NS=tarema-prof-e2e-$$
# Leave the shared cluster as found: no profiler labels, no profile annotations.
cleanup() {
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  kubectl label nodes --all tarema.io/cpu- tarema.io/mem- tarema.io/io- tarema.io/group- >/dev/null 2>&1
  kubectl annotate nodes --all tarema.io/profile- >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

nodes_of() { kubectl get nodes -l "tarema.io/machine-type=$1" -o jsonpath='{.items[*].metadata.name}'; }
label_of() { kubectl get node "$1" -o jsonpath="{.metadata.labels.tarema\.io/$2}"; }
annot_of() { kubectl get node "$1" -o jsonpath='{.metadata.annotations.tarema\.io/profile}'; }

# profile NODE TYPE: the node's NodeProfile as `tarema-profiler bench` makes it, with sysbench,
# fio and lscpu replaying their real recorded output (tests/fixtures/profiler/replay) at Table
# IV-like figures for the machine type: the profiler's own code, not a hand-written look-alike.
profile() {
  local cpu mem
  case $2 in
    e2 | n1) cpu=$((368 + RANDOM % 17)) mem=$((13100 + RANDOM % 1100)) ;;
    n2) cpu=$((469 + RANDOM % 2)) mem=$((17700 + RANDOM % 100)) ;;
    c2) cpu=$((522 + RANDOM % 3)) mem=19800 ;;
  esac
  mkdir -p "$WORK/fio"
  PATH="$REPO_ROOT/tests/fixtures/profiler/replay:$PATH" REPLAY_CPUS=8 REPLAY_CPU_EPS=$cpu \
    REPLAY_MEM_MIBPS=$mem REPLAY_SEQ_IOPS=481 REPLAY_RAND_IOPS=10$((2 + RANDOM % 2)) \
    "$P" bench --quick --node "$1" --dir "$WORK/fio" -o - --log-level error
}

if ! kubectl get nodes >/dev/null 2>&1; then
  fail "the control plane answers (KUBECONFIG=${KUBECONFIG:-unset})" "$(kubectl get nodes 2>&1 | tail -n 3)"
  summary
  exit 1
fi
ALL=()
for t in e2 n1 n2 c2; do
  for n in $(nodes_of $t); do profile "$n" $t >"$WORK/$n.json"; ALL+=("$n"); done
done
[ ${#ALL[@]} -ge 6 ] && pass "cluster has kwok nodes of the four machine types (${#ALL[@]})" ||
  fail "cluster has kwok nodes of the four machine types" "found: ${ALL[*]}"

if "$P" group -o "$WORK/groups.json" "$WORK"/*.json >"$WORK/table.txt" 2>&1 &&
  grep -q '"k": 3' "$WORK/groups.json" && grep -q "^${#ALL[@]} nodes, k=3" "$WORK/table.txt"; then
  pass "group finds the paper's three groups"
else
  fail "group finds the paper's three groups" "$(cat "$WORK/table.txt")"
fi

check "apply labels every node" "$P" apply "$WORK/groups.json"
ok=1
for n in $(nodes_of e2) $(nodes_of n1); do [ "$(label_of "$n" group)" = 1 ] && [ "$(label_of "$n" cpu)" = 1 ] || ok=0; done
for n in $(nodes_of n2); do [ "$(label_of "$n" group)" = 2 ] && [ "$(label_of "$n" mem)" = 2 ] || ok=0; done
for n in $(nodes_of c2); do [ "$(label_of "$n" group)" = 3 ] && [ "$(label_of "$n" cpu)" = 3 ] || ok=0; done
for n in "${ALL[@]}"; do [ "$(label_of "$n" io)" = 1 ] || ok=0; done
[ $ok = 1 ] && pass "labels: e2+n1 group 1, n2 group 2, c2 group 3, equal disks share io=1" ||
  fail "labels on nodes" "$(kubectl get nodes -L tarema.io/group,tarema.io/cpu,tarema.io/mem,tarema.io/io)"
c2=$(nodes_of c2 | cut -d' ' -f1)
if annot_of "$c2" | qgrep '"cpu_single_eps"' && [ "$(label_of "$c2" machine-type)" = c2 ]; then
  pass "profile annotation written, foreign tarema.io/machine-type label kept"
else
  fail "profile annotation written, foreign label kept" "$(annot_of "$c2")"
fi

out=$("$P" apply "$WORK/groups.json" 2>&1)
echo "$out" | qgrep "0 node(s) labelled, 0 cleaned, ${#ALL[@]} unchanged" &&
  pass "a repeated apply patches nothing" || fail "a repeated apply patches nothing" "$out"

# Second apply with fewer nodes: the c2 machines left the document.
mkdir "$WORK/fewer"
for n in "${ALL[@]}"; do case " $(nodes_of c2) " in *" $n "*) ;; *) cp "$WORK/$n.json" "$WORK/fewer/" ;; esac; done
"$P" group -o "$WORK/groups2.json" "$WORK"/fewer/*.json >/dev/null 2>&1
check "second apply with fewer nodes" "$P" apply "$WORK/groups2.json"
ok=1
for n in $(nodes_of c2); do
  [ -z "$(label_of "$n" group)$(label_of "$n" cpu)$(label_of "$n" mem)$(label_of "$n" io)$(annot_of "$n")" ] || ok=0
  [ "$(label_of "$n" machine-type)" = c2 ] || ok=0
done
for n in $(nodes_of n2); do [ -n "$(label_of "$n" group)" ] || ok=0; done
[ $ok = 1 ] && pass "nodes that left lose their tarema labels and annotation, others keep them" ||
  fail "stale labels cleaned" "$(kubectl get nodes -L tarema.io/group,tarema.io/cpu,tarema.io/machine-type)"

# A document naming a node the cluster does not have: the others are applied, exit status 1.
sed 's/"node": "'"$c2"'"/"node": "no-such-node"/' "$WORK/groups.json" >"$WORK/ghost.json"
if out=$("$P" apply "$WORK/ghost.json" 2>&1); then
  fail "apply reports a node missing from the cluster" "exit 0: $out"
else
  echo "$out" | qgrep "no-such-node" && pass "apply reports a node missing from the cluster" ||
    fail "apply reports a node missing from the cluster" "$out"
fi

# run: Jobs per node, profiles collected from ConfigMaps, grouped, applied.
kubectl create namespace "$NS" >/dev/null
"$P" run --quick --namespace "$NS" --timeout 120 -o "$WORK/run.json" >"$WORK/run.out" 2>&1 &
RUN_PID=$!
jobs_created() { [ "$(kubectl -n "$NS" get jobs -o name 2>/dev/null | wc -l)" -ge "${#ALL[@]}" ]; }
if wait_for 60 jobs_created; then pass "run creates one Job per node"; else fail "run creates one Job per node" "$(cat "$WORK/run.out")"; fi
pinned=$(kubectl -n "$NS" get job "tarema-profile-$c2" -o jsonpath='{.spec.template.spec.nodeName}')
[ "$pinned" = "$c2" ] && pass "the Job is pinned to its node" || fail "the Job is pinned to its node" "nodeName=$pinned"
# The node side: one real quick benchmark published for the first node, Table IV-shaped
# profiles for the rest.
first=${ALL[0]:-}
check "bench --quick --publish (real benchmark, stands in for node $first)" \
  "$P" bench --quick --node "$first" --dir "$WORK" --publish --namespace "$NS" -o "$WORK/real.json"
rest=()
for n in "${ALL[@]:1}"; do rest+=("$WORK/$n.json"); done
check "publish the other nodes' profiles" "$P" publish --namespace "$NS" "${rest[@]}"
wait $RUN_PID
rc=$?
if [ $rc = 0 ] && grep -q "${#ALL[@]} profiled, 0 reused, 0 failed" "$WORK/run.out"; then
  pass "run collects every profile, groups and applies"
else
  fail "run collects every profile, groups and applies" "rc=$rc $(tail -n 20 "$WORK/run.out")"
fi
grep -q "profiled ${#ALL[@]}/${#ALL[@]} nodes" "$WORK/run.out" && pass "run reports progress" ||
  fail "run reports progress" "$(cat "$WORK/run.out")"
[ -n "$(label_of "$c2" group)" ] && [ -n "$(label_of "$first" group)" ] &&
  pass "run labelled the nodes" || fail "run labelled the nodes" "$(kubectl get nodes -L tarema.io/group)"
[ "$(kubectl -n "$NS" get jobs -o name | wc -l)" = 0 ] && pass "run removes its Jobs" ||
  fail "run removes its Jobs" "$(kubectl -n "$NS" get jobs)"

# A node whose benchmark never reports: named as failed, exit 1, the node keeps its labels.
if out=$("$P" run --nodes "$c2" --namespace "$NS" --timeout 3 2>&1); then
  fail "run reports a node that was not profiled" "exit 0: $out"
else
  echo "$out" | qgrep "not profiled: $c2: no profile within 3 s" && [ -n "$(label_of "$c2" group)" ] &&
    pass "run reports a node that was not profiled and keeps its previous labels" ||
    fail "run reports a node that was not profiled" "$out"
fi
# An empty --nodes list (a script's empty variable) is an error, never "every node".
if out=$("$P" run --nodes "" --namespace "$NS" --timeout 2 2>&1); then
  fail "run --nodes '' is refused" "exit 0: $out"
else
  echo "$out" | qgrep "give at least one node name" && ! echo "$out" | qgrep "targeted" &&
    pass "run --nodes '' is refused before anything is profiled" || fail "run --nodes '' is refused" "$out"
fi
out=$("$P" run --changed --namespace "$NS" --timeout 5 2>&1)
echo "$out" | qgrep "0 node(s) targeted" && pass "run --changed skips nodes profiled since their last change" ||
  fail "run --changed skips unchanged nodes" "$out"
kubectl annotate node "$c2" tarema.io/profile- >/dev/null
out=$("$P" run --changed --namespace "$NS" --timeout 2 2>&1)
echo "$out" | qgrep "1 node(s) targeted" && echo "$out" | qgrep "not profiled: $c2" &&
  pass "run --changed re-profiles a node without a current profile annotation" ||
  fail "run --changed re-profiles a node without a profile annotation" "$out"
summary
