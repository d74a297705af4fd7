#!/usr/bin/env bash
# nextflow_docs_test.sh: docs/nextflow.md shows exactly the configuration the real-Nextflow
# test runs with, and none of what a real Nextflow contradicted (issue 12, defect 5).
#  - every block marked <!-- verbatim: PATH --> equals the file PATH, and the page has such
#    blocks for tests/fixtures/nextflow/nextflow.config and k8s.yaml;
#  - versions: schedulerName needs 24.04, nf-k8s is a plugin from 25.04, the weblog is the
#    nf-weblog plugin from 23.10;
#  - the trace is on in the config and the page says the metrics need it (weblog-only gives none);
#  - no claim that the default trace fields lack rchar/wchar, nor that labelling reads hostname;
#  - k8s.fetchNodeName = true in the config; no `-profile k8s` for nf-core pipelines;
#  - stdin ingest through kubectl uses `exec -i` and `--run`;
#  - prerequisites: namespace, ServiceAccount + RBAC, bound claim, storageMountPath.
# Needs no cluster.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
DOC=docs/nextflow.md
FIX=tests/fixtures/nextflow
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# block PATH: the fenced block right after the marker for PATH (empty if there is none).
block() {
  awk -v want="<!-- verbatim: $1 -->" '
    $0 == want { armed = 1; next }
    armed == 1 && /^```/ { armed = 2; next }
    armed == 2 && /^```$/ { exit }
    armed == 2 { print }' "$DOC"
}
for f in "$FIX/nextflow.config" "$FIX/k8s.yaml"; do
  grep -qxF "<!-- verbatim: $f -->" "$DOC" && pass "$DOC shows $f" || fail "$DOC shows $f" "no <!-- verbatim: $f --> block"
done
while read -r path; do
  block "$path" >"$work/block"
  if [ ! -f "$path" ]; then
    fail "verbatim block of $path" "no such file"
  elif diff -u "$path" "$work/block" >"$work/diff"; then
    pass "the block of $path equals the file"
  else
    fail "the block of $path equals the file" "$(head -n 20 "$work/diff")"
  fi
done < <(sed -n 's/^<!-- verbatim: \(.*\) -->$/\1/p' "$DOC")

has() { grep -qiE -- "$2" "$DOC" && pass "$1" || fail "$1" "pattern not in $DOC: $2"; }
hasnt() { ! grep -qiE -- "$2" "$DOC" && pass "$1" || fail "$1" "$(grep -niE -- "$2" "$DOC" | head -n 3)"; }
has "schedulerName needs Nextflow 24.04" 'schedulerName.*24\.04|24\.04.*schedulerName'
has "the nf-k8s plugin only from 25.04" 'nf-k8s.*25\.04|25\.04.*nf-k8s'
has "the weblog is the nf-weblog plugin from 23.10, fetched at run time" '23\.10.*nf-weblog.*run time|nf-weblog.*23\.10'
has "metrics need the trace (or report, timeline): .command.trace" '\.command\.trace'
grep -qE '^\s*enabled = true' "$FIX/nextflow.config" && grep -q '^trace' "$FIX/nextflow.config" &&
  pass "the config turns the trace on" || fail "the config turns the trace on" "$(grep -n trace "$FIX/nextflow.config")"
hasnt "no claim that default trace fields lack rchar/wchar" 'lack[^.]*(rchar|wchar)'
has "only hostname is missing from the default trace fields" 'only `hostname` is missing'
grep -qE '^\s*fetchNodeName = true' "$FIX/nextflow.config" && pass "k8s.fetchNodeName = true in the config" ||
  fail "fetchNodeName in the config" "$(cat "$FIX/nextflow.config")"
hasnt "no claim that hostname tells labelling which node group a run used" 'hostname` tells which node'
has "says the labels do not use hostname" 'labels do not use it'
hasnt "no -profile k8s" '-profile k8s'
has "stdin ingest with kubectl exec -i" 'exec -i deploy/tarema-labeler'
ingest_line=$(grep -A1 'exec -i deploy/tarema-labeler' "$DOC" | tr '\n' ' ')
[[ $ingest_line == *"--run "* && $ingest_line == *"/dev/stdin"* ]] && pass "stdin ingest names the run (--run)" ||
  fail "stdin ingest names the run" "$ingest_line"
for kind in Namespace ServiceAccount Role RoleBinding PersistentVolume PersistentVolumeClaim; do
  grep -qx "kind: $kind" "$FIX/k8s.yaml" && pass "k8s.yaml has a $kind" || fail "k8s.yaml has a $kind" ""
done
grep -q 'volumeName: nextflow-work' "$FIX/k8s.yaml" && pass "the claim is pre-bound (volumeName)" || fail "claim pre-bound" ""
has "the work dir lies under storageMountPath" 'work directory under that path'
summary
