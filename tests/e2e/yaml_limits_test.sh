#!/usr/bin/env bash
# yaml_limits_test.sh: every program that reads YAML (tarema-sim's cluster and workload files,
# tarema-scheduler --config, every kubeconfig reader) refuses a 50,000-deep file (100 KB; it
# used to crash them with a stack overflow) and an alias bomb (it used to take seconds and
# gigabytes, then fail with an empty message) with a message naming the limit, exit status 1
# or 2 (never a signal), within a second. Needs no cluster or database.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

DEEP="$TMP/deep.yaml"
head -c 50000 /dev/zero | tr '\0' '[' >"$DEEP"
head -c 50000 /dev/zero | tr '\0' ']' >>"$DEEP"
echo >>"$DEEP"
BOMB="$REPO_ROOT/tests/fixtures/yaml/alias-bomb.yaml"
TINY="$REPO_ROOT/tests/fixtures/sim/tiny-cluster.yaml"
DB=postgres://nobody@127.0.0.1:1/none # never reached: the kubeconfig fails first
# A memory cap keeps an unfixed build from taking gigabytes; AddressSanitizer builds (make
# test-sanitize) reserve terabytes of address space up front, so they run without it.
VMEM_KB=1000000
case $(ldd "$BIN/tarema-sim" 2>/dev/null) in *libasan*) VMEM_KB=unlimited ;; esac

# refuses NAME FILE WANT COMMAND...: COMMAND (with FILE in it) exits 1 or 2 within 5 s, its
# output contains WANT, and it took under a second.
refuses() {
  local name=$1 file=$2 want=$3
  shift 3
  local start end rc out
  start=$(date +%s%N)
  out=$(ulimit -v $VMEM_KB; timeout 5 "$@" 2>&1)
  rc=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000))
  if [ "$rc" != 1 ] && [ "$rc" != 2 ]; then
    fail "$name" "exit status $rc (want 1 or 2): $(echo "$out" | tail -n 3)"
  elif ! grep -qF -- "$want" <<<"$out"; then
    fail "$name" "message does not say '$want': $(echo "$out" | tail -n 3)"
  elif ! grep -qF -- "$file" <<<"$out"; then
    fail "$name" "message does not name $file: $(echo "$out" | tail -n 3)"
  elif [ "$ms" -ge 1000 ]; then
    fail "$name" "took $ms ms"
  else
    pass "$name ($ms ms)"
  fi
}

for kind in deep bomb; do
  if [ $kind = deep ]; then f=$DEEP want="YAML nesting deeper than 256 levels at line 1"; else
    f=$BOMB want="document contains excessive aliasing"
  fi
  refuses "$kind: tarema-sim --cluster" "$f" "$want" "$BIN/tarema-sim" --cluster "$f" --workload "$f"
  refuses "$kind: tarema-sim --workload" "$f" "$want" "$BIN/tarema-sim" --cluster "$TINY" --workload "$f"
  refuses "$kind: tarema-scheduler --config" "$f" "$want" "$BIN/tarema-scheduler" --config "$f"
  refuses "$kind: tarema-scheduler --kubeconfig" "$f" "$want" "$BIN/tarema-scheduler" --kubeconfig "$f"
  refuses "$kind: tarema-scheduler explain --kubeconfig" "$f" "$want" "$BIN/tarema-scheduler" explain ns/pod --kubeconfig "$f"
  refuses "$kind: tarema-profiler \$KUBECONFIG" "$f" "$want" env KUBECONFIG="$f" "$BIN/tarema-profiler" run --dry-run
  refuses "$kind: tarema-labeler serve --kubeconfig" "$f" "$want" "$BIN/tarema-labeler" serve --kubeconfig "$f" --db "$DB" --port 0 --bind 127.0.0.1
done

summary
