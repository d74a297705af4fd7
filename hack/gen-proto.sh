#!/usr/bin/env bash
# hack/gen-proto.sh [--check]: generates lib/proto/*.pb-c.{c,h}, the protobuf-c code of the
# Kubernetes types tarema decodes from the API server's protobuf encoding
# (application/vnd.kubernetes.protobuf; lib/kube_proto.h). The generated C is checked in, so a
# build needs neither Go nor protoc-c; this script is how it is made and how it is kept current.
#
#   (no argument)  fetch the .proto files, run protoc-c, write lib/proto/
#   --check        generate into a temporary directory and compare with lib/proto/; exit 1 and
#                  name the files that differ (run by `make lint` and by tests/e2e/
#                  proto_current_test.sh in `make test`). protoc-c missing is a failure, never
#                  a skip: the check would otherwise pass without checking anything.
#
# Sources: the generated.proto files of k8s.io/api and k8s.io/apimachinery at
# PROTO_API_VERSION (hack/versions.env: pinned, whatever TAREMA_K8S_VERSION a run uses), from
# the Go module proxy through
# `go mod download -json` (a no-op when they are in the module cache already).
#
# The files are renamed before protoc-c sees them: every upstream file is called
# generated.proto, and one archive (build/libtarema.a) cannot hold two members of one name
# (ar keeps one). k8s.io/api/core/v1/generated.proto becomes k8s_core_v1.proto, and the imports
# are rewritten to match, so the generated sources include each other by the flat names. The
# protobuf package names are not touched: the wire format and the C type names
# (K8s__Io__Api__Core__V1__Pod, ...) are upstream's.
#
# The set is what a pod or node list, a watch stream and a lease need: core/v1 and its imports
# (meta/v1, runtime, runtime/schema, api/resource, util/intstr) and coordination/v1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

mode=write
case ${1:-} in
  '') ;;
  --check) mode=check ;;
  *) die "usage: hack/gen-proto.sh [--check]" ;;
esac
OUT=lib/proto

# PROTOC_C: the compiler to run (default protoc-c from PATH).
PROTOC_C=${PROTOC_C:-protoc-c}
command -v "$PROTOC_C" >/dev/null ||
  die "$PROTOC_C is not installed (Debian package protobuf-c-compiler: run hack/install-deps.sh)"
command -v go >/dev/null || die "go is not installed (needed to fetch the .proto files from the Go module proxy)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Module directories in the Go module cache, fetched from the proxy when missing. Run outside
# any go.mod so that the versions asked are the versions fetched.
step "fetching k8s.io/api and k8s.io/apimachinery $PROTO_API_VERSION (Go module proxy)"
json=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json \
  "k8s.io/api@$PROTO_API_VERSION" "k8s.io/apimachinery@$PROTO_API_VERSION" \
  2>"$tmp/go.log") || { cat "$tmp/go.log" >&2; die "go mod download failed (see above)"; }
moddir() { # module path -> its Dir in the module cache
  printf '%s\n' "$json" | awk -v m="$1" '
    /"Path":/ { p = $2; gsub(/[",]/, "", p) }
    /"Dir":/ && p == m { d = $2; gsub(/[",]/, "", d); print d; exit }'
}
api=$(moddir k8s.io/api)
mach=$(moddir k8s.io/apimachinery)
[ -d "$api" ] && [ -d "$mach" ] || die "go mod download gave no directory for k8s.io/api or k8s.io/apimachinery"

# upstream import path -> flat name. The order is irrelevant; every import of every file
# must be in this table (checked below), so a new upstream import fails loudly.
declare -A flat=(
  [k8s.io/api/core/v1/generated.proto]=k8s_core_v1.proto
  [k8s.io/api/coordination/v1/generated.proto]=k8s_coordination_v1.proto
  [k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto]=k8s_meta_v1.proto
  [k8s.io/apimachinery/pkg/runtime/generated.proto]=k8s_runtime.proto
  [k8s.io/apimachinery/pkg/runtime/schema/generated.proto]=k8s_runtime_schema.proto
  [k8s.io/apimachinery/pkg/api/resource/generated.proto]=k8s_resource.proto
  [k8s.io/apimachinery/pkg/util/intstr/generated.proto]=k8s_intstr.proto
)
mkdir -p "$tmp/src" "$tmp/out"
for up in "${!flat[@]}"; do
  case $up in
    k8s.io/api/*) src=$api/${up#k8s.io/api/} ;;
    k8s.io/apimachinery/*) src=$mach/${up#k8s.io/apimachinery/} ;;
  esac
  [ -f "$src" ] || die "$src is missing from the module"
  for imp in $(sed -n 's/^import "\(.*\)";$/\1/p' "$src"); do
    [ -n "${flat[$imp]:-}" ] || die "$up imports $imp, which hack/gen-proto.sh does not map"
  done
  sedargs=()
  for from in "${!flat[@]}"; do sedargs+=(-e "s#^import \"$from\";#import \"${flat[$from]}\";#"); done
  sed "${sedargs[@]}" "$src" >"$tmp/src/${flat[$up]}"
done

step "protoc-c $("$PROTOC_C" --version 2>&1 | head -1 | awk '{print $NF}') on ${#flat[@]} files"
(cd "$tmp/src" && "$PROTOC_C" --c_out="$tmp/out" ./*.proto 2>"$tmp/protoc.log") ||
  { cat "$tmp/protoc.log" >&2; die "protoc-c failed on the .proto files of $PROTO_API_VERSION"; }
# Upstream imports files it does not use, and protoc-c warns about each: noise here.
grep -v 'is unused\.$' "$tmp/protoc.log" >&2 || true

# A note on top of each generated file: where it came from and how to remake it.
for f in "$tmp"/out/*.pb-c.[ch]; do
  {
    echo "/* lib/proto/$(basename "$f"): made by hack/gen-proto.sh from k8s.io/api and"
    echo " * k8s.io/apimachinery $PROTO_API_VERSION; do not edit, run the script. */"
    cat "$f"
  } >"$f.new" && mv "$f.new" "$f"
done

if [ $mode = check ]; then
  bad=0
  for f in "$tmp"/out/*; do
    b=$(basename "$f")
    if ! cmp -s "$f" "$OUT/$b"; then
      echo "stale: $OUT/$b differs from what hack/gen-proto.sh generates" >&2
      bad=1
    fi
  done
  for f in "$OUT"/*.pb-c.[ch]; do
    [ -e "$f" ] || continue
    [ -e "$tmp/out/$(basename "$f")" ] || { echo "stale: $f is not generated any more" >&2; bad=1; }
  done
  [ $bad = 0 ] || die "lib/proto/ is not current: run bash hack/gen-proto.sh and commit the result"
  step "lib/proto/ is current ($(ls "$tmp"/out | wc -l) files)"
  exit 0
fi

mkdir -p "$OUT"
rm -f "$OUT"/*.pb-c.[ch]
cp "$tmp"/out/* "$OUT"/
step "wrote $(ls "$tmp"/out | wc -l) files into $OUT/ ($(du -ch "$OUT"/*.pb-c.[ch] | tail -1 | cut -f1))"
