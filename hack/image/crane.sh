#!/usr/bin/env bash
# hack/image/crane.sh: prints the path of go-containerregistry's crane at $CRANE_VERSION
# (hack/versions.env), building it from the Go module proxy into $TAREMA_CACHE/bin the first
# time (about 2 minutes). The image build packs and reads OCI images with it.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
crane=$TOOLS_BIN/crane
if [ ! -x "$crane" ] || [ "$("$crane" version 2>/dev/null)" != "$CRANE_VERSION" ]; then
  command -v go >/dev/null || die "go is needed to build crane $CRANE_VERSION (Debian: golang-go)"
  step "building crane $CRANE_VERSION from the Go module proxy into $TOOLS_BIN"
  mkdir -p "$TOOLS_BIN"
  GOBIN="$TOOLS_BIN" CGO_ENABLED=0 go install -ldflags '-s -w' \
    "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION" >&2 ||
    die "go install crane@$CRANE_VERSION failed"
  [ "$("$crane" version)" = "$CRANE_VERSION" ] || die "$crane reports $("$crane" version), not $CRANE_VERSION"
fi
echo "$crane"
