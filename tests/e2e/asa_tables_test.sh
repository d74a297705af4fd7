#!/usr/bin/env bash
# tests/e2e/asa_tables_test.sh: `tarema-sim asa --scenario tables` (docs/asa.md, "Tables 1 and
# 2"): one row per workflow and size, deterministic per seed, and the properties the model must
# show whatever its numbers: Big Job never holds fewer core-hours than per-stage (it holds the
# peak for the whole run) and never perceives more waits than one; with full feedback ASA's
# estimates track the real waits and its makespan beats per-stage (nearly everywhere) and comes
# near Big Job's where waits are long and stable; the published (tuned) update
# does not learn a noisy queue (its estimates are far from the waits).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
sim() { "$BIN/tarema-sim" asa --scenario tables --runs 10 "$@"; }

check "tables runs (full)" bash -c "'$BIN/tarema-sim' asa --scenario tables --runs 2 --policy full --json >/dev/null"
sim --policy full --json >"$WORK/full.json"
sim --policy full --json >"$WORK/full2.json"
sim --policy tuned --json >"$WORK/tuned.json"
check "deterministic for a seed" cmp -s "$WORK/full.json" "$WORK/full2.json"
check "3 workflows x 6 sizes" test "$(jq '.rows | length' "$WORK/full.json")" = 18
check "Big Job holds at least per-stage's core-hours in every row" \
  jq -e '[.rows[] | .strategies | .bigjob.core_h >= .perstage.core_h - 1e-9] | all' "$WORK/full.json"
check "per-stage perceives at least Big Job's one wait in every row" \
  jq -e '[.rows[] | .strategies | .perstage.twt_s >= .bigjob.twt_s - 1e-9] | all' "$WORK/full.json"
check "full feedback: ASA's mean estimate within a factor 2 of the real wait at 160+ cores" \
  jq -e '[.rows[] | select(.cores >= 160) | .asa_accuracy | (.asa_wt_s / .real_wt_s) | . > 0.5 and . < 2] | all' "$WORK/full.json"
check "full feedback: ASA's makespan below per-stage's in at least 16 of 18 rows" \
  jq -e '[.rows[] | .strategies | select(.asa.makespan_s < .perstage.makespan_s)] | length >= 16' "$WORK/full.json"
check "full feedback: ASA's makespan within 20 % of Big Job's at 160+ cores" \
  jq -e '[.rows[] | select(.cores >= 160) | .strategies | .asa.makespan_s < 1.2 * .bigjob.makespan_s] | all' "$WORK/full.json"
check "tuned (published) update on a noisy queue: mean estimate over 3x the real wait in most rows" \
  jq -e '[.rows[] | .asa_accuracy | (.asa_wt_s / .real_wt_s) > 3] | map(select(.)) | length >= 12' "$WORK/tuned.json"
sim --policy full --early free --json >"$WORK/free.json"
check "--early free (job dependencies): ASA holds exactly per-stage's core-hours" \
  jq -e '[.rows[] | .strategies | (.asa.core_h - .perstage.core_h) | fabs < 1e-6] | all' "$WORK/free.json"
check "--early free changes only the idle cost: same makespans as hold" \
  test "$(jq -c '[.rows[].strategies.asa.makespan_s]' "$WORK/free.json")" = "$(jq -c '[.rows[].strategies.asa.makespan_s]' "$WORK/full.json")"
check "--early hold: early grants cost idle core-hours" \
  jq -e '[.rows[] | .asa_accuracy.oh_core_h > 0] | all' "$WORK/full.json"
"$BIN/tarema-sim" asa --scenario tables --runs 2 >"$WORK/table.txt"
check "text tables print Table 1 and Table 2" bash -c "grep -q '^ASA Table 1 ' '$WORK/table.txt' && grep -q '^ASA Table 2 ' '$WORK/table.txt'"
# refused as a usage error (exit 2, naming the value), not any non-zero exit: a crash is no refusal
for v in 0 1001; do
  check "--runs $v out of range refused: exit 2, named" bash -c "'$BIN/tarema-sim' asa --scenario tables --runs $v >/dev/null 2>'$WORK/runs.err'; rc=\$?; cat '$WORK/runs.err'; [ \$rc = 2 ] && grep -q \"runs '$v' is not a number in 1..1000\" '$WORK/runs.err'"
done
summary
