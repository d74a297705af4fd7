#!/usr/bin/env bash
# labeler_groups_test.sh: `tarema-labeler serve` follows the live cluster without polling it.
# Runs stored by `tarema-labeler ingest` (another process) reach the published TaskProfiles
# through the store's NOTIFY, and relabelling the test's own Nodes (a Node informer, no
# --groups) changes the TaskProfile labels by the new core shares. The resync safety net is
# set far beyond the test's length, so only the events can make these changes. Status-only
# Node updates do not count as group changes. Uses its own Nodes (selected by a label, tainted)
# and namespace, and deletes both. Needs KUBECONFIG and DATABASE_URL.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"
: "${DATABASE_URL:?DATABASE_URL must point at the test PostgreSQL}"

ID=$(printf '%05d' $((RANDOM % 100000)))
P=lg$ID- # node name prefix
ns=lab-groups-$ID
wf=e2e-groups-$ID
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  kubectl delete nodes -l "tarema.io/e2e-labeler=$ID" --wait=false >/dev/null 2>&1
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
  psql "$DATABASE_URL" -qAtc "DELETE FROM task_runs WHERE workflow = '$wf'" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# Three groups: slow 2 x 2 cores (labels 1), mid 2 x 4 (labels 2), fast 1 x 16 (labels 3).
node_entry() { # PREFIX COUNT CPU GROUP LABEL
  echo "  - {prefix: $P$1, count: $2, cpu: $3, memory: 8Gi, pods: 10,
     labels: {tarema.io/e2e-labeler: \"$ID\", tarema.io/group: \"$4\", tarema.io/cpu: \"$5\", tarema.io/mem: \"$5\", tarema.io/io: \"$5\"},
     taints: [{key: tarema.io/e2e, value: \"$ID\", effect: NoSchedule}]}"
}
{
  echo "nodes:"
  node_entry slow 2 2 slow 1
  node_entry mid 2 4 mid 2
  node_entry fast 1 16 fast 3
} >"$work/nodes.yaml"
check "test nodes created" bash hack/cluster.sh nodes "$work/nodes.yaml"
check "CRD applies" apply_shared -f manifests/crds/taskprofile.yaml
check "CRD established" kubectl wait --for=condition=Established --timeout=30s crd/taskprofiles.tarema.io
kubectl create namespace "$ns" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$BIN/tarema-labeler" serve --bind 127.0.0.1 --port "$port" --spool "$work/spool" \
  --namespace "$ns" --node-selector "tarema.io/e2e-labeler=$ID" --resync-seconds 3600 \
  --log-level debug >"$work/serve.log" 2>&1 &
pid=$!
if wait_for 20 curl -sf "$url/readyz"; then pass "serve becomes ready"; else fail "serve becomes ready" "$(tail -5 "$work/serve.log")"; fi
if wait_for 20 grep -q 'node groups known groups=3' "$work/serve.log"; then pass "serve sees the three node groups of its Nodes"; else
  fail "serve sees the three node groups" "$(grep -i group "$work/serve.log" | tail -5)"; fi

# 15 runs, %cpu 100..1500: A 100-300 (mean 200), B 400-800 (600), C 900-1500 (1200).
# Before: cpu classes 4, 8, 16 of 28 cores: p = 1/7, 3/7; h = 14p = 2, 6 -> bounds 300, 700:
# A 1, B 2, C 3. After the relabel below (fast is weakest, slow strongest): classes 16, 8, 4:
# p = 4/7, 6/7; h = 8, 12 -> bounds 900, 1300: A 1, B 1, C 2.
{
  printf 'task_id\tprocess\tstatus\t%%cpu\tpeak_rss\trchar\twchar\trealtime\n'
  for i in $(seq 1 15); do
    p=C; [ "$i" -le 8 ] && p=B; [ "$i" -le 3 ] && p=A
    printf '%d\tG:%s\tCOMPLETED\t%d%%\t%d MB\t%d\t0\t%ds\n' "$i" "$p" $((i * 100)) "$i" $((i * 1000)) "$i"
  done
} >"$work/trace.txt"
check "ingest while serve runs" "$BIN/tarema-labeler" ingest --workflow "$wf" "$work/trace.txt"

tp_label() { # PROCESS FEATURE
  kubectl -n "$ns" get taskprofiles -o jsonpath="{.items[?(@.spec.process==\"G:$1\")].status.labels.$2}"
}
cpu_labels() { echo "$(tp_label A cpu)$(tp_label B cpu)$(tp_label C cpu)"; }
labels_are() { [ "$(cpu_labels)" = "$1" ]; }
if wait_for 15 labels_are 123; then pass "ingested runs are published at once (NOTIFY): cpu labels 1 2 3"; else
  fail "ingested runs published" "got '$(cpu_labels)'; $(tail -5 "$work/serve.log")"; fi
shares=$(kubectl -n "$ns" get taskprofiles -o jsonpath='{.items[?(@.spec.process=="G:B")].status.groups.cpu.shares}')
[ "$shares" = "[0.14285714285714285,0.2857142857142857,0.5714285714285714]" ] &&
  pass "core shares come from the live Nodes" || fail "core shares from the live Nodes" "$shares"

# metric NAME: its value (0 when not served); nothing and status 1 when the scrape fails, so a
# dead labeler never reads as "0 changes".
metric() {
  local m
  m=$(read_ok curl -sf --max-time 5 "$url/metrics") || return 1
  awk -v m="$1" '$1 == m {print $2; found=1} END {if (!found) print 0}' <<<"$m"
}
# A Node update that touches nothing the groups depend on is not a group change.
kubectl annotate node "${P}fast-1" "tarema.io/e2e-touch=$RANDOM" --overwrite >/dev/null 2>&1 ||
  kubectl annotate nodes -l "tarema.io/e2e-labeler=$ID" "tarema.io/e2e-touch=$RANDOM" --overwrite >/dev/null
# No counter closes "not a change": the negative holds at every poll for 2 s.
no_group_change() { [ "$(metric tarema_labeler_node_group_changes_total)" = 0 ]; }
always_for 2 no_group_change && pass "status-only Node updates are not group changes" ||
  fail "status-only Node updates" "changes=$(metric tarema_labeler_node_group_changes_total)"

# Swap the cpu ranks of slow and fast on the cluster.
kubectl label nodes -l "tarema.io/e2e-labeler=$ID,tarema.io/group=fast" tarema.io/cpu=1 --overwrite >/dev/null &&
  kubectl label nodes -l "tarema.io/e2e-labeler=$ID,tarema.io/group=slow" tarema.io/cpu=3 --overwrite >/dev/null
if wait_for 15 labels_are 112; then pass "relabelled Nodes change the published labels: 1 1 2"; else
  fail "relabelled Nodes change the labels" "got '$(cpu_labels)'; $(grep -i group "$work/serve.log" | tail -5)"; fi
bounds=$(kubectl -n "$ns" get taskprofiles -o jsonpath='{.items[?(@.spec.process=="G:C")].status.bounds.cpu}')
[ "$bounds" = "[900,1300]" ] && pass "new bounds 900, 1300" || fail "new bounds" "$bounds"
[ "$(metric tarema_labeler_node_group_changes_total)" -ge 1 ] && pass "group change counted" ||
  fail "group change counted" "$(metric tarema_labeler_node_group_changes_total)"

# A node leaving changes the shares too: without the fast node, cpu classes are mid 8 (2)
# and slow 4 (3): p = 2/3, h = 9.33 -> bound 1033.3: A 1, B 1, C 2 (1200 >= 1033.3).
kubectl delete node "$(kubectl get nodes -l "tarema.io/e2e-labeler=$ID,tarema.io/group=fast" -o jsonpath='{.items[0].metadata.name}')" >/dev/null
two_classes() { [ "$(kubectl -n "$ns" get taskprofiles -o jsonpath='{.items[?(@.spec.process=="G:C")].status.groups.cpu.n}')" = 2 ]; }
if wait_for 15 two_classes; then pass "a deleted Node changes the groups"; else fail "deleted Node" "$(tail -5 "$work/serve.log")"; fi
summary
