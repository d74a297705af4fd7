#!/usr/bin/env bash
# Builds, once, the real Kubernetes control plane used by tests and the demo: kube-apiserver,
# kube-scheduler, kube-controller-manager, kubectl, etcd, kwok and helm, all from the Go module proxy
# (no release binaries can be downloaded here). Results are cached outside the repository
# (layout in hack/lib.sh): the Kubernetes binaries in $TAREMA_CACHE/k8s/<version>/bin, one
# directory per version, the rest in $TAREMA_CACHE/bin; a second run does nothing.
# TAREMA_K8S_VERSION=v1.X.Y builds another supported version (hack/versions.env) alongside.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v go >/dev/null || die "Go toolchain not found: install Go 1.25+ (only used to build the local control plane)"
mkdir -p "$TOOLS_BIN" "$K8S_BIN" "$TAREMA_CACHE/build"
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0

# have/mark take an optional directory (default $TOOLS_BIN); the Kubernetes binaries pass $K8S_BIN.
have() { local d=${3:-$TOOLS_BIN}; [ -x "$d/$1" ] && [ -f "$d/.$1.version" ] && [ "$(cat "$d/.$1.version")" = "$2" ]; }
mark() { echo "$2" >"${3:-$TOOLS_BIN}/.$1.version"; }
log_of() { echo "$TAREMA_CACHE/build/$1.log"; }
build_or_die() { # name version -- command...
  local name=$1 version=$2; shift 3
  local log; log=$(log_of "$name")
  if ! "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "building $name $version failed (full log: $log)"
  fi
}

# Kubernetes: a wrapper module requires k8s.io/kubernetes and replaces every staging module
# (./staging/src/k8s.io/X in the tag's go.mod) with the published k8s.io/X module.
# kubectl is built too, so tests and operators never depend on whichever kubectl (of whatever
# version) happens to be installed.
k8s_components=(kube-apiserver kube-scheduler kube-controller-manager kubectl)
# One build per version at a time (two test runs asking for the same cold version wait for one
# build, not race two into the same files); other versions build or run meanwhile.
exec 9>>"$TAREMA_CACHE/k8s/.$KUBERNETES_VERSION.lock"
flock 9
# A cache from before the per-version layout holds this version in $TOOLS_BIN: hard-link it
# (same file system, no copy) rather than spend ~40 minutes rebuilding it. The old names stay,
# since checkouts from before this layout still run from there.
for c in "${k8s_components[@]}"; do
  if ! have "$c" "$KUBERNETES_VERSION" "$K8S_BIN" && have "$c" "$KUBERNETES_VERSION"; then
    ln -f "$TOOLS_BIN/$c" "$K8S_BIN/$c" 2>/dev/null || cp "$TOOLS_BIN/$c" "$K8S_BIN/$c"
    mark "$c" "$KUBERNETES_VERSION" "$K8S_BIN"
    step "reused $c $KUBERNETES_VERSION from $TOOLS_BIN"
  fi
done
need_k8s=0
for c in "${k8s_components[@]}"; do have "$c" "$KUBERNETES_VERSION" "$K8S_BIN" || need_k8s=1; done
if [ $need_k8s = 1 ]; then
  dir="$TAREMA_CACHE/build/k8s-$KUBERNETES_VERSION"
  mkdir -p "$dir"
  step "fetching k8s.io/kubernetes $KUBERNETES_VERSION module metadata"
  # A failing `go` must end in the one message below, not in a silent `set -e` exit.
  modfile=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" 2>"$(log_of "k8s-fetch-$KUBERNETES_VERSION")" |
    sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') || true
  if [ ! -f "$modfile" ]; then
    tail -n 20 "$(log_of "k8s-fetch-$KUBERNETES_VERSION")" >&2
    die "could not fetch go.mod of k8s.io/kubernetes $KUBERNETES_VERSION from the Go module proxy (full log: $(log_of "k8s-fetch-$KUBERNETES_VERSION"))"
  fi
  staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$modfile")
  {
    echo "module tarema.local/k8s-build"
    echo
    echo "go 1.25.0"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    for m in $staging; do echo "replace $m => $m $KUBERNETES_STAGING_VERSION"; done
  } >"$dir/go.mod"
  cat >"$dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  step "resolving Kubernetes dependencies ($(echo "$staging" | wc -w) staging modules replaced)"
  build_or_die "k8s-mod-$KUBERNETES_VERSION" "$KUBERNETES_VERSION" -- bash -c "cd '$dir' && go mod tidy -e && go mod download"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$KUBERNETES_MINOR"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  i=0
  for c in "${k8s_components[@]}"; do
    i=$((i + 1))
    have "$c" "$KUBERNETES_VERSION" "$K8S_BIN" && continue
    step "building $c $KUBERNETES_VERSION ($i/${#k8s_components[@]}; a cold build takes several minutes)"
    build_or_die "$c-$KUBERNETES_VERSION" "$KUBERNETES_VERSION" -- bash -c "cd '$dir' && go build -ldflags '$ldflags' -o '$K8S_BIN/$c' k8s.io/kubernetes/cmd/$c"
    mark "$c" "$KUBERNETES_VERSION" "$K8S_BIN"
  done
fi
exec 9>&-
# The version-independent tools share $TOOLS_BIN: one builder at a time.
exec 9>>"$TAREMA_CACHE/.tools.lock"
flock 9

# etcd: the server module has no main package; etcdmain.Main is what the etcd binary calls.
if ! have etcd "$ETCD_VERSION"; then
  dir="$TAREMA_CACHE/build/etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<GOMOD
module tarema.local/etcd-build

go 1.25.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
  cat >"$dir/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  step "building etcd $ETCD_VERSION"
  build_or_die etcd "$ETCD_VERSION" -- bash -c "cd '$dir' && go mod tidy && go build -ldflags '-s -w' -o '$TOOLS_BIN/etcd' ."
  mark etcd "$ETCD_VERSION"
fi

if ! have kwok "$KWOK_VERSION"; then
  step "building kwok $KWOK_VERSION"
  build_or_die kwok "$KWOK_VERSION" -- env GOBIN="$TOOLS_BIN" go install -ldflags '-s -w' "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mark kwok "$KWOK_VERSION"
fi

if ! have helm "$HELM_VERSION"; then
  step "building helm $HELM_VERSION"
  build_or_die helm "$HELM_VERSION" -- env GOBIN="$TOOLS_BIN" go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mark helm "$HELM_VERSION"
fi

# The hostPath provisioner (hack/hostpath-provisioner/main.go) on
# sigs.k8s.io/sig-storage-lib-external-provisioner: keyed by the library's version and the
# source's hash, so an edit of main.go rebuilds it.
prov_src="$HACK_DIR/hostpath-provisioner/main.go"
prov_key="$SIG_STORAGE_PROVISIONER_VERSION-$(sha256sum "$prov_src" | cut -c1-12)"
if ! have hostpath-provisioner "$prov_key"; then
  dir="$TAREMA_CACHE/build/hostpath-provisioner"
  mkdir -p "$dir"
  printf 'module tarema.local/hostpath-provisioner\n\ngo 1.26.0\n' >"$dir/go.mod"
  cp "$prov_src" "$dir/main.go"
  step "building hostpath-provisioner (sig-storage-lib-external-provisioner $SIG_STORAGE_PROVISIONER_VERSION)"
  build_or_die hostpath-provisioner "$prov_key" -- bash -c "cd '$dir' && go get 'sigs.k8s.io/sig-storage-lib-external-provisioner/v13@$SIG_STORAGE_PROVISIONER_VERSION' 'k8s.io/client-go@$PROVISIONER_CLIENT_GO_VERSION' && go mod tidy && go build -ldflags '-s -w' -o '$TOOLS_BIN/hostpath-provisioner' ."
  mark hostpath-provisioner "$prov_key"
fi

step "control plane tools ready: Kubernetes $KUBERNETES_VERSION in $K8S_BIN, etcd/kwok/helm in $TOOLS_BIN"
