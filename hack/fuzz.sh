#!/usr/bin/env bash
# hack/fuzz.sh (`make fuzz`): builds the libFuzzer harnesses of tests/fuzz/ with clang and
# AddressSanitizer + UndefinedBehaviorSanitizer against the project's own sources, then runs
# each for a bounded time, one after the other (the machine is shared), and prints a summary.
#
#   FUZZ_SECONDS=60      seconds per target
#   FUZZ_RUNS=n          instead: n executions per target (libFuzzer -runs; e.g. 1000000), each
#                        still stopped after FUZZ_MAX_SECONDS (default 3600)
#   FUZZ_NICE=10         niceness of the fuzzers (the machine is shared)
#   FUZZ_TARGET=names    only these targets (e.g. "quantity" or "quantity,selector"); default:
#                        every tests/fuzz/*_fuzz.c
#   FUZZ_NO_SANITIZE=x   checks to leave out (clang -fno-sanitize=x), to fuzz past a known,
#                        reported bug: e.g. nonnull-attribute. Builds into its own directory.
#   FUZZ_BUILD=dir       objects, binaries, logs and the growing corpora (default build/fuzz,
#                        or $O/fuzz when O is set in the environment)
#   FUZZ_JOBS=2          parallel compile jobs
#   FUZZ_RSS_MB=2048     memory limit of one target; FUZZ_TIMEOUT=10 seconds for one input
#
# Seeds come from tests/fuzz/corpus/<target>/ (read only); what libFuzzer finds goes to
# $FUZZ_BUILD/corpus/<target>/. A crash, leak, UB report, time-out or out-of-memory input is
# saved as tests/fuzz/crashes/<target>-<kind>-<sha1>, and the script exits non-zero. Once the
# bug is fixed, copy the reproducer into tests/fuzz/corpus/<target>/ so the replay unit test
# (tests/unit/fuzz_replay_test.c) keeps it fixed. No network is used except to install clang
# when it is missing.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1
export REPO_ROOT # the harnesses find tests/fixtures through it

SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
RUNS=${FUZZ_RUNS:-}
NICE=${FUZZ_NICE:-10}
ONLY=${FUZZ_TARGET:-}
NO_SANITIZE=${FUZZ_NO_SANITIZE:-}
B=${FUZZ_BUILD:-${O:-build}/fuzz}
[ -z "$NO_SANITIZE" ] || B="$B-no-${NO_SANITIZE//[^a-z0-9-]/_}"
JOBS=${FUZZ_JOBS:-2}
RSS_MB=${FUZZ_RSS_MB:-2048}
UNIT_TIMEOUT=${FUZZ_TIMEOUT:-10}
CRASH_DIR=tests/fuzz/crashes
PKGS="libcurl jansson libpq yaml-0.1 libmicrohttpd libprotobuf-c"
COMPONENTS="profiler labeler scheduler sim"

case $SECONDS_PER_TARGET in '' | *[!0-9]*) die "FUZZ_SECONDS must be a whole number of seconds" ;; esac
if [ -n "$RUNS" ]; then
  case $RUNS in *[!0-9]*) die "FUZZ_RUNS must be a whole number of executions" ;; esac
  SECONDS_PER_TARGET=${FUZZ_MAX_SECONDS:-3600}
  case $SECONDS_PER_TARGET in '' | *[!0-9]*) die "FUZZ_MAX_SECONDS must be a whole number" ;; esac
fi
case $NICE in '' | *[!0-9-]*) die "FUZZ_NICE must be a number" ;; esac
mkdir -p "$B" || die "cannot create $B"
B=$(cd "$B" && pwd)

# ---- toolchain ---------------------------------------------------------------------------------

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  step "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >/dev/null 2>&1 || die "apt-get update failed"
  $sudo apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "$@" \
    >"$B/apt.log" 2>&1 || { tail -20 "$B/apt.log" >&2; die "apt-get install $* failed (log: $B/apt.log)"; }
}

fuzzer_runtime_ok() {
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
    >"$B/probe.c"
  clang -fsanitize=fuzzer,address,undefined -o "$B/probe" "$B/probe.c" >"$B/probe.log" 2>&1
}

command -v clang >/dev/null || apt_install clang
command -v clang >/dev/null || die "clang is not installed"
if ! fuzzer_runtime_ok; then
  ver=$(clang -dumpversion | cut -d. -f1)
  apt_install "libclang-rt-${ver}-dev"
  fuzzer_runtime_ok || { cat "$B/probe.log" >&2; die "clang cannot link -fsanitize=fuzzer (see above)"; }
fi
pkg-config --exists $PKGS || die "libraries missing ($PKGS): run make deps first"

# ---- build -------------------------------------------------------------------------------------

targets=()
for f in tests/fuzz/*_fuzz.c; do
  t=$(basename "$f" _fuzz.c)
  case ",${ONLY//[ ]/,}," in ,,* | *",$t,"*) targets+=("$t") ;; esac
done
for o in ${ONLY//,/ }; do
  [ -f "tests/fuzz/${o}_fuzz.c" ] ||
    die "no fuzz target named '$o' (have: $(ls tests/fuzz/*_fuzz.c | xargs -n1 basename | sed 's/_fuzz.c$//' | tr '\n' ' '))"
done

# The project's sources get coverage instrumentation and the sanitizers but not libFuzzer's
# main (fuzzer-no-link); only the harness links it. -fno-sanitize-recover makes UB a crash that
# libFuzzer saves. Warnings are gcc's business (the Makefile's -Werror build).
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
[ -z "$NO_SANITIZE" ] || SAN="$SAN -fno-sanitize=$NO_SANITIZE"
CFLAGS_F="-std=c17 -D_GNU_SOURCE -O1 -g $SAN -I. -Itests $(pkg-config --cflags $PKGS)"
LIBS_F="$(pkg-config --libs $PKGS) -lglpk -lm -lpthread"

# A generated Makefile gives incremental, -j builds with header dependencies.
{
  echo "CFLAGS_F := $CFLAGS_F"
  echo "LIBS_F := $LIBS_F"
  echo "B := $B"
  echo "LIB_OBJS := \$(patsubst %.c,\$(B)/obj/%.o,\$(wildcard lib/*.c lib/proto/*.c))"
  archives="\$(B)/libtarema.a"
  for c in $COMPONENTS; do
    echo "${c}_OBJS := \$(patsubst %.c,\$(B)/obj/%.o,\$(filter-out $c/main.c,\$(shell find $c -name '*.c')))"
    echo "\$(B)/lib$c.a: \$(${c}_OBJS)"
    printf '\t@rm -f $@ && ar rcs $@ $^\n'
    archives="$archives \$(B)/lib$c.a"
  done
  echo "ARCHIVES := $archives"
  echo "\$(B)/libtarema.a: \$(LIB_OBJS)"
  printf '\t@rm -f $@ && ar rcs $@ $^\n'
  echo "\$(B)/obj/%.o: %.c"
  printf '\t@mkdir -p $(dir $@)\n\t@echo "  CC $<"\n\t@clang $(CFLAGS_F) -fsanitize=fuzzer-no-link -w -MMD -MP -c -o $@ $<\n'
  echo "\$(B)/bin/%_fuzz: tests/fuzz/%_fuzz.c \$(ARCHIVES)"
  printf '\t@mkdir -p $(dir $@)\n\t@echo "  LINK $@"\n'
  printf '\t@clang $(CFLAGS_F) -fsanitize=fuzzer -Wall -Wextra -MMD -MP -MF $@.d -o $@ $< -Wl,--start-group $(ARCHIVES) -Wl,--end-group $(LIBS_F)\n'
  echo "-include \$(shell find \$(B)/obj \$(B)/bin -name '*.d' 2>/dev/null)"
  # labeler/migrations.c embeds the SQL files with .incbin, which -MMD cannot see.
  echo "\$(B)/obj/labeler/migrations.o: \$(wildcard labeler/migrations/*.sql)"
} >"$B/fuzz.mk"

bins=()
for t in "${targets[@]}"; do bins+=("$B/bin/${t}_fuzz"); done
step "building ${#targets[@]} fuzz target(s) with clang $(clang -dumpversion) into $B"
make --no-print-directory -f "$B/fuzz.mk" -j"$JOBS" "${bins[@]}" || die "building the fuzz targets failed"

# ---- run ---------------------------------------------------------------------------------------

mkdir -p "$CRASH_DIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

summary=()
found=0
for t in "${targets[@]}"; do
  seeds="tests/fuzz/corpus/$t"
  work="$B/corpus/$t"
  log="$B/logs/$t.log"
  art="$B/artifacts/$t"
  mkdir -p "$work" "$(dirname "$log")" "$art"
  [ -d "$seeds" ] || step "warning: no seed corpus $seeds"
  step "fuzzing $t for ${RUNS:+$RUNS runs or }${SECONDS_PER_TARGET}s (log: $log)"
  t0=$SECONDS
  timeout --kill-after=10 $((SECONDS_PER_TARGET + 120)) nice -n "$NICE" "$B/bin/${t}_fuzz" \
    ${RUNS:+-runs=$RUNS} \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="$UNIT_TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -print_final_stats=1 -artifact_prefix="$art/" \
    "$work" $([ -d "$seeds" ] && echo "$seeds") >"$log" 2>&1
  rc=$?
  took=$((SECONDS - t0))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
  result="ok"
  if [ "$rc" != 0 ]; then
    found=1
    result="FAILED (exit $rc)"
    for a in "$art"/*; do
      [ -f "$a" ] || continue
      kind=$(basename "$a" | cut -d- -f1) # crash, leak, timeout, oom, slow-unit
      dest="$CRASH_DIR/$t-$kind-$(sha1sum "$a" | cut -c1-12)"
      mv "$a" "$dest"
      result="FAILED: $kind saved as $dest"
      echo
      echo "=== $t: $kind; reproducer saved as $dest"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error:|fuzz invariant broken|    #[0-9]+ )' "$log" | head -40
      echo "reproduce: $B/bin/${t}_fuzz $dest"
      echo "once fixed: cp $dest tests/fuzz/corpus/$t/ (the replay unit test then keeps it fixed)"
      echo
    done
    [ "$result" = "FAILED (exit $rc)" ] && tail -30 "$log"
  fi
  step "$t: $result; ${execs:-?} runs in ${took}s, ${eps:-?} exec/s, ${cov:-no coverage figure}"
  summary+=("$(printf '%-14s %10s runs %6ss %8s exec/s  %-30s %s' "$t" "${execs:-?}" "$took" "${eps:-?}" "${cov:-?}" "$result")")
done

echo
echo "fuzz summary (${RUNS:+$RUNS runs or }${SECONDS_PER_TARGET}s per target, ASan+UBSan${NO_SANITIZE:+ without $NO_SANITIZE}, logs in $B/logs):"
printf '  %s\n' "${summary[@]}"
if [ "$found" != 0 ]; then
  echo "fuzzing found problems: reproducers are in $CRASH_DIR/"
  exit 1
fi
echo "no crash, leak or undefined behaviour found"
