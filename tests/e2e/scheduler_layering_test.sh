#!/usr/bin/env bash
# scheduler_layering_test.sh: the scheduler framework's layering, checked on the sources (no
# cluster needed). From the bottom: match.{c,h} (shared matching rules) knows neither the
# framework nor any plugin; the plugins (scheduler/plugin_*.c) see framework.h and match.h but
# never the framework's internals; the framework's own files (framework.c, cycle.c, scan.c,
# permit.c) include no plugin header (filters.h, policy.h, volumes.h, plugin_*); only those
# files include framework_internal.h. A planted violation must be caught, so the check can fail.
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1

# includes FILE: the quoted project headers FILE includes, one per line
includes() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"; }

# violations FILE PATTERN: FILE's includes matching the extended regex PATTERN
violations() { includes "$1" | grep -E "$2" || true; }

FRAMEWORK_FILES="scheduler/framework.c scheduler/cycle.c scheduler/scan.c scheduler/permit.c"
PLUGIN_HEADERS='scheduler/(filters|policy|volumes|plugin_[a-z_]*)\.h'

check_plugins() {
  local bad=""
  for f in scheduler/plugin_*.c; do
    v=$(violations "$f" 'framework_internal\.h')
    [ -n "$v" ] && bad="$bad $f:$v"
  done
  [ -z "$bad" ] || { echo "plugins including the framework's internals:$bad"; return 1; }
}

check_framework() {
  local bad=""
  for f in $FRAMEWORK_FILES; do
    [ -f "$f" ] || { bad="$bad $f:missing"; continue; }
    v=$(violations "$f" "$PLUGIN_HEADERS")
    [ -n "$v" ] && bad="$bad $f:$v"
  done
  [ -z "$bad" ] || { echo "framework files including plugin headers:$bad"; return 1; }
}

check_match() {
  local bad=""
  for f in scheduler/match.c scheduler/match.h; do
    [ -f "$f" ] || { bad="$bad $f:missing"; continue; }
    v=$(violations "$f" "scheduler/framework(_internal)?\.h|$PLUGIN_HEADERS")
    [ -n "$v" ] && bad="$bad $f:$v"
  done
  [ -z "$bad" ] || { echo "match.{c,h} including the layers above it:$bad"; return 1; }
}

check_internal_users() {
  local users
  users=$(grep -l '#include "scheduler/framework_internal.h"' scheduler/*.c scheduler/*.h sim/*.c \
            tests/unit/*.c bench/*.c 2>/dev/null | sort | tr '\n' ' ')
  [ "$users" = "scheduler/cycle.c scheduler/framework.c scheduler/permit.c scheduler/scan.c " ] ||
    { echo "framework_internal.h included by: $users"; return 1; }
}

check_planted_violation() {
  local tmp
  tmp=$(mktemp -d) || return 1
  printf '#include "scheduler/filters.h"\n#include <stdio.h>\n' >"$tmp/framework.c"
  printf '#include "scheduler/framework_internal.h"\n' >"$tmp/plugin_x.c"
  local a b
  a=$(violations "$tmp/framework.c" "$PLUGIN_HEADERS")
  b=$(violations "$tmp/plugin_x.c" 'framework_internal\.h')
  rm -rf "$tmp"
  [ "$a" = "scheduler/filters.h" ] && [ "$b" = "scheduler/framework_internal.h" ] ||
    { echo "planted violations not caught: '$a' '$b'"; return 1; }
}

check "no plugin includes the framework's internals" check_plugins
check "the framework's files include no plugin header" check_framework
check "match.{c,h} sits below the framework and the plugins" check_match
check "only the framework's own files include framework_internal.h" check_internal_users
check "a planted violation is caught" check_planted_violation
summary
