#!/usr/bin/env bash
# scheduler_explain_test.sh: `tarema-scheduler explain` against the real API server, read as a
# person reads it. Own tainted kwok nodes in three tarema groups, one pod already running on a
# node of the preferred group, and a labeled pod no scheduler picks up (its schedulerName has no
# scheduler), so explain shows what tarema would do: each group's rank and label distance
# written out with both label vectors, each node's load in words and numbers, and why the
# chosen node won. No packed internal score in the text.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

sched_e2e_begin explain ex
sched_e2e_namespace

cat >"$WORK/nodes.yaml" <<YAML
nodes:
  - {prefix: ${P}slow, count: 2, cpu: 2, memory: 4Gi, pods: 20,
     labels: {tarema.io/cpu: "1", tarema.io/mem: "1", tarema.io/io: "1", tarema.io/group: "slow"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}mid, count: 2, cpu: 4, memory: 8Gi, pods: 20,
     labels: {tarema.io/cpu: "2", tarema.io/mem: "2", tarema.io/io: "2", tarema.io/group: "mid"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
  - {prefix: ${P}fast, count: 1, cpu: 16, memory: 32Gi, pods: 20,
     labels: {tarema.io/cpu: "3", tarema.io/mem: "3", tarema.io/io: "3", tarema.io/group: "fast"},
     taints: [{key: tarema.io/e2e, value: "$ID", effect: NoSchedule}]}
YAML
check "test nodes created" bash "$REPO_ROOT/hack/cluster.sh" nodes "$WORK/nodes.yaml"
# A pod already on mid-1 (placed by nodeName): 1 of its 4 cores and 1 of its 8 GiB requested.
pod_json "$NS" filler nobody-$ID 1 1Gi '{}' "$ID" | jq '.spec.nodeName = "'"${P}mid-1"'"' | kubectl create -f - >/dev/null
wait_for 30 bash -c "[ \"\$(kubectl get pod -n $NS filler -o jsonpath='{.status.phase}')\" = Running ]"
# The explained pod: task labels cpu 3, mem 1, io 2 -> distance slow 3, mid 2, fast 3.
pod_json "$NS" task nobody-$ID 500m 256Mi '{"tarema.io/cpu": "3", "tarema.io/mem": "1", "tarema.io/io": "2"}' "$ID" | kubectl create -f - >/dev/null

text=$("$BIN/tarema-scheduler" explain "$NS/task" 2>"$WORK/err")
rc=$?
[ $rc = 0 ] && pass "explain (text) runs" || fail "explain (text) runs" "rc=$rc $(cat "$WORK/err")"
echo "$text" | sed 's/^/    | /'
mine=$(grep -E "^  (rank|$P)" <<<"$text") # only this test's groups and nodes
# Groups are the cluster's: a test running beside this one may add a group nearer the task (its
# nodes tainted for it: none fits this pod). So mid's rank R is read from the same output, and
# checked to be ahead of this test's other groups, with only groups where nothing fits before it.
rank_of() { sed -nE "s/^  rank ([0-9]+) +group $1 .*/\1/p" <<<"$text"; }
R=$(rank_of mid)
ahead_ok() {
  local r=${R:-0} n
  [ "$r" -ge 1 ] && [ "$(rank_of slow)" -gt "$r" ] && [ "$(rank_of fast)" -gt "$r" ] || return 1
  n=$(awk -v r="$r" '$1 == "rank" && $2 < r && !/ 0 fit$/' <(sed 's/^  //' <<<"$text") | wc -l)
  [ "$n" = 0 ]
}
grep -Eq "rank $R +group mid +labels cpu 2, mem 2, io 2 +distance \|2-3\| \+ \|2-1\| \+ \|2-2\| = 2" <<<"$mine" && ahead_ok &&
  pass "group mid ranks $R, first of this test's groups and behind only groups where nothing fits, with its distance written out: |2-3| + |2-1| + |2-2| = 2" ||
  fail "group mid ranks first of this test's groups with its distance written out" "$(grep -E "^  rank" <<<"$text")"
grep -q "task labels cpu 3, mem 1, io 2\|labels cpu 3, mem 1, io 2" <<<"$text" &&
  pass "the task's labels are shown" || fail "the task's labels are shown" "$(head -n 3 <<<"$text")"
grep -Eq "${P}mid-1 +group mid \(rank $R\) +fits; load 25 %: cpu requested 1 of 4 cores \(25 %\), memory 1 of 8 GiB \(12 %\), 1 of 20 pods" <<<"$mine" &&
  pass "mid-1's load in words and numbers: cpu requested 1 of 4 cores (25 %)" ||
  fail "mid-1's load in words and numbers" "$(grep "${P}mid-1" <<<"$mine")"
grep -Eq "^why: group mid ranks $R: label distance 2, .*${P}mid-2 is the least-loaded of 2 node\(s\) that fit \(load 0 %; next: ${P}mid-1 at 25 %\)" <<<"$text" &&
  pass "why: the best-ranked group, and mid-2 less loaded than mid-1" || fail "why the chosen node won" "$(grep '^why' <<<"$text")"
grep -q "^selected: ${P}mid-2" <<<"$text" && pass "selected: mid-2" || fail "selected: mid-2" "$(grep '^selected' <<<"$text")"
[ -n "$mine" ] && ! grep -Eq '[0-9]{9,}' <<<"$mine" && pass "no packed internal score in the text" ||
  fail "no packed internal score in the text" "$(grep -E '[0-9]{9,}' <<<"$mine")"

json=$("$BIN/tarema-scheduler" explain "$NS/task" -o json 2>"$WORK/err")
if [ -n "$json" ] && jq -e --arg m "${P}mid-1" '
    ([.groups[] | select(.id == "mid")][0].rank) as $r |
    ([.groups[] | select(.rank < $r and .feasible > 0)] | length) == 0 and
    ([.groups[] | select((.id == "slow" or .id == "fast") and .rank <= $r)] | length) == 0 and
    (.groups[] | select(.id == "mid") | .distance == 2 and
       ([.distanceTerms[] | "\(.feature):\(.group)-\(.task)=\(.diff)"] == ["cpu:2-3=1", "mem:2-1=1", "io:2-2=0"])) and
    (.nodes[] | select(.name == $m) | .groupRank == $r and .load.cpuRequestedMilli == 1000 and
       .load.cpuAllocatableMilli == 4000 and .load.memoryRequestedBytes == 1073741824 and
       .load.share == 0.25) and
    .task.requests.cpuMilli == 500 and (.why | test("group mid ranks \($r):"))' <<<"$json" >/dev/null; then
  pass "explain -o json: named fields for rank, distance terms, load and why"
else
  fail "explain -o json: named fields" "$(cat "$WORK/err"; jq -c '{groups: [.groups[] | select(.id == "mid")], why}' <<<"$json" 2>&1 | head -c 800)"
fi
summary
