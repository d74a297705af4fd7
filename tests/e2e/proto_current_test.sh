#!/usr/bin/env bash
# proto_current_test.sh: lib/proto/ (protoc-c's code for the Kubernetes types, checked in) is
# what hack/gen-proto.sh makes from k8s.io/api and k8s.io/apimachinery at the pinned version,
# and the check notices a changed file, an extra file, and a missing protoc-c (a failure, never
# a skip). No cluster needed; the .proto files come from the Go module cache or proxy.
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1

check "lib/proto/ is current (hack/gen-proto.sh --check)" bash hack/gen-proto.sh --check

# plant DESCRIPTION EXPECTED-TEXT SETUP [ENV...]: the check, run in a copy of hack/ and
# lib/proto/ changed by SETUP, must fail and say EXPECTED-TEXT.
plant() {
  local what=$1 want=$2 setup=$3 tmp out
  shift 3
  tmp=$(mktemp -d) || { fail "$what" "mktemp failed"; return; }
  mkdir -p "$tmp/lib" && cp -r hack "$tmp/" && cp -r lib/proto "$tmp/lib/"
  if ! (cd "$tmp" && eval "$setup"); then
    fail "$what" "planting failed: $setup"
  elif out=$(env "$@" bash "$tmp/hack/gen-proto.sh" --check 2>&1); then
    fail "$what" "the check passed"
  elif ! echo "$out" | grep -F -q -- "$want"; then
    fail "$what" "expected '$want', got: $(echo "$out" | tail -n 3)"
  else
    pass "$what"
  fi
  rm -rf "$tmp"
}
plant "a hand-edited generated file is found" "stale: lib/proto/k8s_intstr.pb-c.c" \
  "echo '/* edited */' >>lib/proto/k8s_intstr.pb-c.c" PATH="$PATH"
plant "a file protoc-c no longer makes is found" "stale: lib/proto/k8s_old.pb-c.h is not generated" \
  "touch lib/proto/k8s_old.pb-c.h" PATH="$PATH"
plant "a missing protoc-c fails with the package to install" "protobuf-c-compiler" \
  "true" PROTOC_C=/nonexistent/protoc-c
summary
