#!/usr/bin/env bash
# hack/check-layers.sh [--root DIR] [--build DIR]: the project's layering, checked on the sources
# (and, with a build, on the archives' symbols). Run by `make lint` and by `make test`.
#
# The allowed dependencies are written once, in docs/architecture.md between the lines
# `<!-- layers:begin -->` and `<!-- layers:end -->`: a table whose rows are `| folder | folders
# it may use |`. A file belongs to the row of the longest folder that contains it; it may include
# the headers of its own row (subfolders without a row of their own included) and of the folders
# listed (a folder listed allows its subfolders' rows too: `scheduler` is the whole scheduler),
# nothing else. `*` allows everything (tests, benchmarks).
#
# Fails on:
#   - an include (#include "...", resolved like the compiler: next to the file, then -I. -Itests)
#     of a header whose row the file's row may not use;
#   - a header named *_internal.h included from outside its own folder (tests and benchmarks
#     may look inside);
#   - any include circle between modules (a module is a .c and its .h: foo.c + foo.h), found by
#     tsort over the whole tree, inside a component or across components;
#   - with --build: a component archive (build/lib<c>.a) with an undefined symbol that another
#     component's archive defines, when the table does not let <c> use that component (what the
#     linker really pulls, whatever the includes say);
#   - two sources of one component with the same file name (ar keeps one member per name).
# Prints one line per violation and a closing `N passed, N failed`.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=""
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$(cd "$2" && pwd); shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: hack/check-layers.sh [--root DIR] [--build DIR]" >&2; exit 2 ;;
  esac
done
cd "$ROOT" || exit 2
TABLE=docs/architecture.md
SOURCE_DIRS="lib profiler labeler scheduler planner dam sim tests bench"
passed=0
failed=0
report() { # name violations-file
  if [ -s "$2" ]; then
    echo "not ok - $1"
    sed 's/^/    /' "$2"
    failed=$((failed + 1))
  else
    echo "ok - $1"
    passed=$((passed + 1))
  fi
}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# The table: "folder<TAB>allowed folders separated by spaces".
sed -n '/<!-- layers:begin -->/,/<!-- layers:end -->/p' "$TABLE" |
  awk -F'|' 'NF >= 4 && $2 !~ /^[ -]*$/ && $2 !~ /folder/ {
      f = $2; a = $3; gsub(/[` ]/, "", f); gsub(/`/, "", a); gsub(/,/, " ", a)
      gsub(/^ +| +$/, "", a); gsub(/ +/, " ", a); print f "\t" a }' >"$tmp/rows"
if [ ! -s "$tmp/rows" ]; then
  echo "not ok - no layer table between <!-- layers:begin --> and <!-- layers:end --> in $TABLE"
  echo "0 passed, 1 failed"
  exit 1
fi

# Every project include as "file<TAB>header" (both repository paths), unresolvable ones
# (system headers) dropped.
files=$(find $SOURCE_DIRS -name '*.[ch]' 2>/dev/null | sort)
for f in $files; do
  d=$(dirname "$f")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while IFS= read -r inc; do
      if [ -f "$d/$inc" ]; then
        case $inc in
          *..*) h=$(realpath -m --relative-to=. "$d/$inc") ;;
          *) h=$d/$inc ;;
        esac
      elif [ -f "$inc" ]; then
        h=$inc
      elif [ -f "tests/$inc" ]; then
        h=tests/$inc
      else
        continue
      fi
      printf '%s\t%s\n' "$f" "$h"
    done
done >"$tmp/edges"

# Folder rules.
awk -F'\t' '
  FILENAME == ARGV[1] { allow[$1] = $2; n++; rows[n] = $1; next }
  function row(path,   best, i) {
    best = ""
    for (i = 1; i <= n; i++)
      if (index(path, rows[i] "/") == 1 && length(rows[i]) > length(best)) best = rows[i]
    return best
  }
  {
    a = row($1); b = row($2)
    if (a == "") { print $1 ": in no row of the layer table"; next }
    if (b == "" || a == b) next
    split(allow[a], ok, " "); good = 0
    for (k in ok) if (ok[k] == "*" || ok[k] == b || index(b, ok[k] "/") == 1) good = 1
    if (!good) print $1 " includes " $2 " (" a " may not use " b ")"
  }' "$tmp/rows" "$tmp/edges" | sort -u >"$tmp/v_rows"
report "every include follows the layer table in $TABLE" "$tmp/v_rows"

awk -F'\t' '$2 ~ /_internal\.h$/ && $1 !~ /^(tests|bench)\// {
    hd = $2; sub(/\/[^\/]*$/, "", hd); fd = $1; sub(/\/[^\/]*$/, "", fd)
    if (fd != hd) print $1 " includes " $2 " (an _internal.h header is for its own folder)"
  }' "$tmp/edges" >"$tmp/v_internal"
report "internal headers are included only from their own folder" "$tmp/v_internal"

# Include circles between modules: tsort reports every loop it breaks. A private header
# foo_internal.h belongs to module foo (foo.c includes it, it includes foo.h).
awk -F'\t' '{ a = $1; b = $2; sub(/\.[ch]$/, "", a); sub(/\.[ch]$/, "", b)
              sub(/_internal$/, "", a); sub(/_internal$/, "", b)
              if (a != b) print a, b }' "$tmp/edges" | sort -u >"$tmp/pairs"
tsort "$tmp/pairs" 2>"$tmp/tsort" >/dev/null
awk '/input contains a loop/ { if (line != "") print line; line = "include circle:"; next }
     /^tsort: / { sub(/^tsort: /, ""); line = line " " $0 " ->"; first[line] = $0 }
     END { if (line != "") print line }' "$tmp/tsort" | sed 's/ ->$/ (back to the first)/' >"$tmp/v_loops"
report "no include circle between modules" "$tmp/v_loops"

# One member name per archive.
for c in profiler labeler scheduler planner dam sim; do
  [ -d "$c" ] || continue
  find "$c" -name '*.c' ! -path "$c/main.c" -printf '%f\n' | sort | uniq -d | sed "s|^|$c: two sources named |"
done >"$tmp/v_names"
report "no two sources of one component share a file name" "$tmp/v_names"

# Links: which component archive defines what another one leaves undefined.
if [ -n "$BUILD" ]; then
  : >"$tmp/v_links"
  for a in "$BUILD"/lib*.a; do
    [ -f "$a" ] || continue
    c=$(basename "$a" .a); c=${c#lib}; [ "$c" = tarema ] && c=lib
    nm --defined-only -g "$a" 2>/dev/null | awk -v c="$c" 'NF == 3 { print $3 "\t" c }'
  done | sort -u >"$tmp/defs"
  for a in "$BUILD"/lib*.a; do
    [ -f "$a" ] || continue
    c=$(basename "$a" .a); c=${c#lib}; [ "$c" = tarema ] && c=lib
    nm -u "$a" 2>/dev/null | awk '{ print $NF }' | sort -u |
      join -t$'\t' - "$tmp/defs" | awk -F'\t' -v c="$c" '$2 != c { print c "\t" $2 "\t" $1 }'
  done | sort -u >"$tmp/links"
  awk -F'\t' 'FILENAME == ARGV[1] { allow[$1] = $2; next }
    { key = $1 "\t" $2; if (seen[key]++) next
      split(allow[$1], ok, " "); good = 0
      for (k in ok) if (ok[k] == "*" || ok[k] == $2 || index(ok[k], $2 "/") == 1) good = 1
      if (!good) print "lib" $1 ".a uses " $3 " of lib" $2 ".a (" $1 " may not use " $2 ")" }' \
    "$tmp/rows" "$tmp/links" | sed 's/liblib\.a/libtarema.a/g' >>"$tmp/v_links"
  report "every archive links only what the layer table allows ($BUILD)" "$tmp/v_links"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
