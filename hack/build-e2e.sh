#!/usr/bin/env bash
# Builds, once, Kubernetes' own end-to-end test binary (e2e.test of k8s.io/kubernetes at
# KUBERNETES_VERSION, hack/versions.env) with only its [sig-scheduling] specs, from the Go module
# proxy as hack/build-controlplane.sh builds the control plane: a wrapper module requires
# k8s.io/kubernetes and replaces every staging module with its published version. The test main
# is hack/e2e/scheduling_e2e_test.go. Result: $TAREMA_CACHE/k8s/<version>/bin/e2e.test, keyed by the version
# and the test main's content, so a second run does nothing. Minutes on a warm Go module cache
# (docs/conformance.md has the measured times).
#
#   hack/build-e2e.sh           build if needed; prints nothing on stdout
#   hack/build-e2e.sh --path    build if needed, then print the binary's path
set -euo pipefail
. "$(dirname "$0")/lib.sh"

print_path=0
case ${1:-} in
  --path) print_path=1 ;;
  "") ;;
  *) die "usage: hack/build-e2e.sh [--path]" ;;
esac

MAIN=$HACK_DIR/e2e/scheduling_e2e_test.go
[ -f "$MAIN" ] || die "$MAIN not found (the e2e.test main)"
# Beside the control plane of its version (hack/lib.sh's K8S_BIN): versions live side by side,
# so a run on another TAREMA_K8S_VERSION never evicts this one's build.
BIN=$K8S_BIN/e2e.test
# The cache key: a new Kubernetes version or a changed test main rebuilds.
KEY="$KUBERNETES_VERSION $(sha256sum "$MAIN" | cut -c1-16)"

if [ -x "$BIN" ] && [ "$(cat "$K8S_BIN/.e2e.test.version" 2>/dev/null)" = "$KEY" ]; then
  [ $print_path = 1 ] && echo "$BIN"
  exit 0
fi

command -v go >/dev/null || die "Go toolchain not found: install Go 1.25+ (only used to build the local control plane and e2e.test)"
mkdir -p "$K8S_BIN" "$TAREMA_CACHE/build"
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0
dir=$TAREMA_CACHE/build/e2e-$KUBERNETES_VERSION
log=$TAREMA_CACHE/build/e2e.test.log
mkdir -p "$dir"
t0=$SECONDS

step "fetching k8s.io/kubernetes $KUBERNETES_VERSION module metadata"
modfile=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" 2>"$log" |
  sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') || true
if [ ! -f "$modfile" ]; then
  tail -n 20 "$log" >&2
  die "could not fetch go.mod of k8s.io/kubernetes $KUBERNETES_VERSION from the Go module proxy (full log: $log)"
fi
staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$modfile")
[ -n "$staging" ] || die "no staging replaces found in $modfile: is $KUBERNETES_VERSION a Kubernetes release tag?"
# The staging modules are published as v0.MINOR.PATCH of the same release.
staging_version=v0.${KUBERNETES_VERSION#v1.}
{
  echo "module tarema.local/e2e-build"
  echo
  echo "go 1.25.0"
  echo
  echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
  echo
  for m in $staging; do echo "replace $m => $m $staging_version"; done
} >"$dir/go.mod"
rm -f "$dir/go.sum"
cp "$MAIN" "$dir/scheduling_e2e_test.go"

step "resolving the e2e dependencies ($(echo "$staging" | wc -w) staging modules replaced)"
if ! (cd "$dir" && nice -n 10 go mod tidy -e && nice -n 10 go mod download) >>"$log" 2>&1; then
  tail -n 30 "$log" >&2
  die "resolving the dependencies of e2e.test $KUBERNETES_VERSION failed (full log: $log)"
fi

minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
step "building e2e.test $KUBERNETES_VERSION ([sig-scheduling] only; a few minutes on a warm Go module cache)"
if ! (cd "$dir" && nice -n 10 go test -c -vet=off -ldflags "$ldflags" -o "$BIN.tmp" .) >>"$log" 2>&1; then
  tail -n 30 "$log" >&2
  die "building e2e.test $KUBERNETES_VERSION failed (full log: $log)"
fi
mv "$BIN.tmp" "$BIN"
echo "$KEY" >"$K8S_BIN/.e2e.test.version"
step "e2e.test $KUBERNETES_VERSION built in $((SECONDS - t0))s: $BIN"
[ $print_path = 1 ] && echo "$BIN"
exit 0
