#!/usr/bin/env bash
# hack/image/build.sh OUT: the Dockerfile's build step. Compiles the binaries (tarema-scheduler,
# tarema-labeler, tarema-profiler, tarema-sim, tarema-dam, tarema-planner) into OUT/bin and writes the runtime package
# lists next to them: OUT/runtime-packages.txt for every image, computed from the binaries by
# hack/image/runtime-deps.sh, and OUT/runtime-packages-profiler.txt, the benchmarks the
# profiler image adds (a copy of hack/image/profiler-packages.txt). hack/build-image.sh makes
# the same lists the same way. Objects go to $O (default OUT/obj), so a repeated run with the
# same O is incremental.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: hack/image/build.sh OUT" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$1
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
O=${O:-$OUT/obj}
mkdir -p "$O"
# The Makefile's dependency check would install test and demo tools (PostgreSQL server,
# valgrind, ...) when sysbench or fio are missing; the build needs only the libraries, so
# check those here and mark the check done.
pkgs="libcurl jansson libpq yaml-0.1 libmicrohttpd libprotobuf-c"
missing=""
for p in $pkgs; do pkg-config --exists "$p" || missing+=" $p"; done
[ -f /usr/include/glpk.h ] || missing+=" glpk"
if [ -n "$missing" ]; then
  echo "error: build libraries missing:$missing (run hack/image/build-deps.sh)" >&2
  exit 1
fi
touch "$O/.deps-ok"
BINS=(tarema-scheduler tarema-labeler tarema-profiler tarema-sim tarema-dam tarema-planner)
make -C "$ROOT" -j"${JOBS:-2}" O="$O" BINDIR="$OUT/bin" "${BINS[@]/#/$OUT/bin/}"
bash "$HERE/runtime-deps.sh" "${BINS[@]/#/$OUT/bin/}" >"$OUT/runtime-packages.txt"
cp "$HERE/profiler-packages.txt" "$OUT/runtime-packages-profiler.txt"
echo "built ${BINS[*]} into $OUT/bin; runtime packages: $(paste -sd' ' "$OUT/runtime-packages.txt")"
