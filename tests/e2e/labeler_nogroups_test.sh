#!/usr/bin/env bash
# labeler_nogroups_test.sh: `tarema-labeler label` on a machine with no cluster (no KUBECONFIG,
# no ~/.kube/config, no in-cluster service account) and no --groups. A new user's first try:
# the message must start by saying that --groups GROUPS.json exists and what it is (the
# profiler's node-groups document), before the kubeconfig detail that explains the failure.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/home"

env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT HOME="$work/home" \
  "$BIN/tarema-labeler" label --workflow new-user >"$work/out" 2>"$work/err"
rc=$?
first=$(head -n 1 "$work/err")
[ $rc = 1 ] && pass "label without a cluster and without --groups fails (exit 1)" ||
  fail "label without a cluster and without --groups fails (exit 1)" "rc=$rc $(cat "$work/err")"
grep -q -- '--groups GROUPS.json' <<<"$first" && pass "the first line names --groups GROUPS.json" ||
  fail "the first line names --groups GROUPS.json" "$(cat "$work/err")"
grep -q 'tarema-profiler group' <<<"$first" && grep -qi 'node.groups' <<<"$first" &&
  pass "the first line says what GROUPS.json is (the node groups tarema-profiler group writes)" ||
  fail "the first line says what GROUPS.json is for" "$(cat "$work/err")"
grep -q 'kubeconfig' "$work/err" && pass "the message still says why the cluster was not reachable" ||
  fail "the message still says why the cluster was not reachable" "$(cat "$work/err")"
summary
