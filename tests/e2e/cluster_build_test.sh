#!/usr/bin/env bash
# End-to-end check that `hack/cluster.sh up` on a machine whose control-plane tools are not
# built yet fails with one clear message when the Go toolchain is missing, and when it is
# there but the build fails (a stand-in `go` that always fails), and starts nothing. Uses an
# empty private TAREMA_CACHE, so the real cache and running instances are never touched.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
mkdir -p "$CACHE/fakebin"
printf '#!/bin/sh\necho "go: simulated toolchain failure" >&2\nexit 1\n' >"$CACHE/fakebin/go"
chmod +x "$CACHE/fakebin/go"
# The system tools the script needs, without any Go toolchain.
NOGO_PATH=/usr/sbin:/usr/bin:/sbin:/bin

up() { env PATH="$1" TAREMA_CACHE="$CACHE" TAREMA_CLUSTER_NAME=e2e-build-$$ bash "$REPO_ROOT/hack/cluster.sh" up 2>&1; }

out=$(up "$NOGO_PATH")
rc=$?
if [ $rc != 0 ] && [ "$(grep -c '^error: ' <<<"$out")" = 1 ] && grep -q '^error: Go toolchain not found' <<<"$out"; then
  pass "no Go toolchain: one clear message ($(grep '^error: ' <<<"$out"))"
else
  fail "no Go toolchain: one clear message" "rc=$rc: $out"
fi

out=$(up "$CACHE/fakebin:$NOGO_PATH")
rc=$?
last=$(tail -n 1 <<<"$out")
if [ $rc != 0 ] && [ "$(grep -c '^error: ' <<<"$out")" = 1 ] && grep -Eq '^error: (could not fetch|building) .*full log: ' <<<"$last"; then
  pass "a failing build: one clear message naming its log ($last)"
else
  fail "a failing build: one clear message naming its log" "rc=$rc: $out"
fi
if grep -q 'simulated toolchain failure' <<<"$out"; then
  pass "the failing build's own output is shown"
else
  fail "the failing build's own output is shown" "$out"
fi
started=$(ls "$CACHE/clusters/e2e-build-$$/run" 2>/dev/null)
if [ -z "$started" ]; then pass "nothing was started"; else fail "nothing was started" "$started"; fi
summary
