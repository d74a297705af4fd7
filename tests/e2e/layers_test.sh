#!/usr/bin/env bash
# layers_test.sh: hack/check-layers.sh passes on the tree (includes, include circles, archive
# names, and the links of this build's archives), and catches each kind of violation planted in
# a copy of the tree: an include the table forbids (the framework using a plugin; the labeler
# using the scheduler), a private header used from outside its folder, an include circle inside
# a component and one across two, two sources of one name, and a link the table forbids.
# Replaces scheduler_layering_test.sh (its rules are rows of the table now). No cluster needed.
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1
O=${O:-build}
CHECK="$REPO_ROOT/hack/check-layers.sh"

check "the tree follows docs/architecture.md's layer table (sources and $O's archives)" \
  bash "$CHECK" --build "$O"

# plant DESCRIPTION EXPECTED-LINE SETUP: runs SETUP in a fresh copy of the sources, then
# expects the check to fail with a line containing EXPECTED-LINE.
plant() {
  local what=$1 want=$2 setup=$3 tmp out
  tmp=$(mktemp -d) || { fail "$what" "mktemp failed"; return; }
  git ls-files -z lib profiler labeler scheduler planner dam sim tests bench docs/architecture.md |
    (cd "$REPO_ROOT" && xargs -0 cp --parents -t "$tmp")
  if ! (cd "$tmp" && eval "$setup"); then
    fail "$what" "planting failed: $setup"
  elif out=$(bash "$CHECK" --root "$tmp" 2>&1); then
    fail "$what" "check-layers passed on the planted tree"
  elif ! echo "$out" | grep -F -q -- "$want"; then
    fail "$what" "expected a line with '$want', got: $(echo "$out" | grep -v '^ok' | head -n 8)"
  else
    pass "$what"
  fi
  rm -rf "$tmp"
}

plant "a framework file including a plugin's header is caught" \
  "scheduler/framework/cycle.c includes scheduler/plugins/filters.h (scheduler/framework may not use scheduler/plugins)" \
  'sed -i "0,/#include \"scheduler\/framework\/framework_internal.h\"/s||&\n#include \"scheduler/plugins/filters.h\"|" scheduler/framework/cycle.c'
plant "a component including one above it is caught (labeler -> scheduler)" \
  "labeler/labels.c includes scheduler/backend/snapshot.h (labeler may not use scheduler/backend)" \
  'printf "#include \"scheduler/backend/snapshot.h\"\n" >>labeler/labels.c'
plant "a plugin including the framework's internals is caught" \
  "scheduler/plugins/node_ports.c includes scheduler/framework/framework_internal.h (an _internal.h header is for its own folder)" \
  'printf "#include \"scheduler/framework/framework_internal.h\"\n" >>scheduler/plugins/node_ports.c'
plant "an include circle inside a component is caught" \
  "include circle:" \
  'printf "#include \"scheduler/backend/queue.h\"\n" >>scheduler/backend/match.h &&
   printf "#include \"scheduler/backend/match.h\"\n" >>scheduler/backend/queue.c'
plant "an include circle through a private header is caught" \
  "include circle:" \
  'printf "#include \"scheduler/framework/framework.h\"\n" >>scheduler/backend/snapshot.c'
plant "two sources of one name in a component are caught" \
  "scheduler: two sources named queue.c" \
  'cp scheduler/backend/queue.c scheduler/live/queue.c'
plant "a folder without a row in the table is caught" \
  "bench/scheduler_policy_bench.c: in no row of the layer table" \
  'sed -i "/^| \`bench\` |/d" docs/architecture.md'

# Links: the archives as built, with one planted undefined symbol that only a component above
# defines (the scheduler using the simulator).
links_planted() {
  local tmp out sym
  tmp=$(mktemp -d) || return 1
  cp "$O"/lib*.a "$tmp/" || { rm -rf "$tmp"; return 1; }
  sym=$(nm --defined-only -g "$O/libsim.a" | awk 'NF == 3 && $2 == "T" { print $3; exit }')
  printf 'void %s(void);\nvoid planted_link(void);\nvoid planted_link(void) { %s(); }\n' \
    "$sym" "$sym" >"$tmp/planted.c"
  cc -c -o "$tmp/planted.o" "$tmp/planted.c" && ar rs "$tmp/libscheduler.a" "$tmp/planted.o" 2>/dev/null
  out=$(bash "$CHECK" --build "$tmp" 2>&1)
  local rc=$?
  rm -rf "$tmp"
  [ $rc != 0 ] && echo "$out" | grep -F -q "libscheduler.a uses $sym of libsim.a (scheduler may not use sim)" ||
    { echo "not caught: $out" | tail -n 5; return 1; }
}
check "an archive linking a component the table forbids is caught (scheduler -> sim)" links_planted
summary
