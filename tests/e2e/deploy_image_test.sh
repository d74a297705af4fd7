#!/usr/bin/env bash
# deploy_image_test.sh: the Dockerfile's build steps, run here (no Docker engine on these
# machines): hack/image/build.sh compiles the component binaries and computes the runtime
# package list; every shared library the binaries load (the whole ldd closure) must come from
# a package in that list or one apt installs with it; the list holds no build tools; the
# runtime install step simulates cleanly; the Dockerfile is multi-stage on Debian bookworm,
# runs only hack/image scripts, and its user matches the chart's runAsUser. Needs no cluster.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Objects in a cache dir of our own, so repeated runs are incremental.
export O=$TAREMA_CACHE/image-test-obj

if bash "$REPO_ROOT/hack/image/build.sh" "$WORK/out" >"$WORK/build.log" 2>&1; then
  pass "hack/image/build.sh builds the binaries and the package lists"
else
  fail "hack/image/build.sh" "$(tail -n 15 "$WORK/build.log")"
  summary
  exit 1
fi
for b in tarema-scheduler tarema-labeler tarema-profiler; do
  [ -x "$WORK/out/bin/$b" ] && "$WORK/out/bin/$b" --help >/dev/null 2>&1 &&
    pass "$b built and runs (--help)" || fail "$b built and runs (--help)"
done
LIST=$WORK/out/runtime-packages.txt
PLIST=$WORK/out/runtime-packages-profiler.txt
for p in libcurl4 libjansson4 libpq5 libyaml-0-2 libmicrohttpd12; do
  grep -qx "$p" "$LIST" && pass "runtime list names $p" || fail "runtime list names $p" "list: $(paste -sd' ' "$LIST")"
done
grep -qx sysbench "$PLIST" && grep -qx fio "$PLIST" && pass "profiler image adds sysbench and fio" ||
  fail "profiler image adds sysbench and fio" "$(cat "$PLIST")"
bad=$(grep -E -- '-dev$|^(gcc|g\+\+|make|build-essential|pkg-config|cpp)' "$LIST" "$PLIST" || true)
[ -z "$bad" ] && pass "no build tools or -dev packages at runtime" || fail "no build tools at runtime" "$bad"

# Closure: every library ldd resolves is owned by a listed package or a dependency apt pulls
# in with them (recursively), or by libc6 which every Debian image has.
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances $(cat "$LIST") libc6 2>/dev/null | grep -v '^ ' | sed 's/:.*//' | sort -u)
owner() {
  local p=$1 real c out
  real=$(readlink -f "$p")
  for c in "$p" "$real" "/usr$p" "${p#/usr}" "/usr$real" "${real#/usr}"; do
    out=$(dpkg -S "$c" 2>/dev/null | head -n 1) && [ -n "$out" ] && { echo "${out%%:*}"; return; }
  done
}
missing=()
nlibs=0
for b in "$WORK"/out/bin/tarema-*; do
  while read -r lib; do
    nlibs=$((nlibs + 1))
    pkg=$(owner "$lib")
    pkg=${pkg%%:*}
    [ -n "$pkg" ] && grep -qx -- "$pkg" <<<"$closure" || missing+=("$(basename "$b"): $lib (${pkg:-no package})")
  done < <(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
done
[ ${#missing[@]} = 0 ] && pass "all $nlibs shared libraries of the binaries are provided by the runtime packages" ||
  fail "shared libraries provided by the runtime packages" "$(printf '%s\n' "${missing[@]}" | sort -u | head)"

out=$(bash "$REPO_ROOT/hack/image/install-runtime.sh" --dry-run "$LIST" "$PLIST" 2>&1) &&
  grep -q 'useradd -u 10001' <<<"$out" && pass "install-runtime.sh --dry-run resolves every package, creates uid 10001" ||
  fail "install-runtime.sh --dry-run" "$out"
printf 'libcurl4\nlibjansson-dev\n' >"$WORK/bad.txt"
out=$(bash "$REPO_ROOT/hack/image/install-runtime.sh" --dry-run "$WORK/bad.txt" 2>&1) &&
  fail "install-runtime.sh refuses a -dev package" "accepted: $out" ||
  { grep -q 'libjansson-dev' <<<"$out" && pass "install-runtime.sh refuses a -dev package, naming it" || fail "install-runtime.sh names the bad package" "$out"; }
printf 'libcurl4\nno-such-package-tarema\n' >"$WORK/bad2.txt"
bash "$REPO_ROOT/hack/image/install-runtime.sh" --dry-run "$WORK/bad2.txt" >/dev/null 2>&1 &&
  fail "install-runtime.sh fails on an unknown package" || pass "install-runtime.sh fails on an unknown package"

# The Dockerfile itself.
DF=$REPO_ROOT/Dockerfile
froms=$(grep -cE '^FROM ' "$DF")
[ "$froms" -ge 3 ] && grep -qE '^ARG DEBIAN_TAG=bookworm' "$DF" && grep -qE '^FROM debian:\$\{DEBIAN_TAG\} AS build' "$DF" &&
  grep -qE '^FROM debian:\$\{DEBIAN_TAG\} AS runtime' "$DF" && pass "Dockerfile: multi-stage on Debian bookworm ($froms stages)" ||
  fail "Dockerfile: multi-stage on Debian bookworm"
runs=$(grep -E '^RUN ' "$DF" | grep -vE '^RUN bash (hack/image/|/usr/local/lib/tarema/)[a-z-]+\.sh' || true)
[ -z "$runs" ] && pass "Dockerfile: every RUN step is a tested hack/image script" || fail "Dockerfile RUN steps" "$runs"
for t in scheduler labeler profiler; do
  grep -qE "^FROM runtime AS $t\$" "$DF" && pass "Dockerfile: target $t" || fail "Dockerfile: target $t"
done
# The last USER of each component stage is the chart's runAsUser, never root.
users=$(awk '/^FROM /{stage=$NF} /^USER /{u[stage]=$2} END{for (s in u) print s, u[s]}' "$DF" | sort)
chart_uid=$(awk '/^podSecurityContext:/{f=1} f && /runAsUser:/{print $2; exit}' "$REPO_ROOT/charts/tarema/values.yaml")
bad=$(awk -v uid="$chart_uid" '$2 != uid":"uid' <<<"$users")
[ -n "$chart_uid" ] && [ -z "$bad" ] && pass "Dockerfile: every stage ends as user $chart_uid (the chart's runAsUser)" ||
  fail "Dockerfile users match the chart" "users: $users; chart runAsUser: $chart_uid"
grep -qE 'build-deps|-dev' <(sed -n '/AS runtime/,$p' "$DF") && fail "runtime stages install no build packages" ||
  pass "runtime stages install no build packages"
for x in .git build/ bin/; do
  grep -qx -- "$x" "$REPO_ROOT/.dockerignore" || { fail ".dockerignore leaves out $x"; continue; }
  pass ".dockerignore leaves out $x"
done
summary
