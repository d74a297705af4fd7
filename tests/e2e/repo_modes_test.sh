#!/usr/bin/env bash
# repo_modes_test.sh: every shell script under hack/ and tests/ is executable in git (mode
# 100755), so `hack/cluster.sh up`, as the README says, works from a fresh clone instead of
# failing with "Permission denied". Reads the index (git ls-files -s), not the work tree: a
# local chmod does not reach a clone, only the mode recorded in git does.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1

if ! listing=$(git ls-files -s -- 'hack/*.sh' 'tests/*.sh' 2>&1) || [ -z "$listing" ]; then
  fail "git lists the scripts under hack/ and tests/" "${listing:-no .sh files found in the index}"
  summary
  exit 1
fi
pass "git lists $(wc -l <<<"$listing") scripts under hack/ and tests/"
for f in hack/cluster.sh hack/postgres.sh tests/run.sh; do
  grep -q "	$f\$" <<<"$listing" && pass "$f is in the listing" || fail "$f is in the listing" "$listing"
done
bad=$(awk '$1 != "100755" { print $1, $4 }' <<<"$listing")
[ -z "$bad" ] && pass "every hack/*.sh and tests/**/*.sh is 100755 in git" ||
  fail "every hack/*.sh and tests/**/*.sh is 100755 in git" \
    "not executable (fix: git update-index --chmod=+x FILE): $(tr '\n' ' ' <<<"$bad")"
summary
