#!/usr/bin/env bash
# hack/image/runtime-deps.sh BINARY...: prints (one per line, sorted) the Debian packages that
# provide the shared libraries the binaries link directly (ELF NEEDED entries, resolved with
# ldd, owner found with dpkg -S). apt installs what those libraries need in turn. libc6 is
# left out: every Debian image has it. Fails naming the library when no package owns one.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: hack/image/runtime-deps.sh BINARY..." >&2; exit 2; }
owner() { # owner PATH: the package owning the file (tries /usr-merged and split paths)
  local p=$1 real cand out
  real=$(readlink -f "$p")
  for cand in "$p" "$real" "/usr$p" "${p#/usr}" "/usr$real" "${real#/usr}"; do
    out=$(dpkg -S "$cand" 2>/dev/null | head -n 1) || continue
    [ -n "$out" ] && { echo "${out%%:*}" | sed 's/:.*//'; return 0; }
  done
  return 1
}
declare -A pkgs=() seen=()
for bin in "$@"; do
  [ -x "$bin" ] || { echo "error: $bin is not an executable" >&2; exit 1; }
  needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}')
  resolved=$(ldd "$bin")
  for lib in $needed; do
    path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {print $3}' <<<"$resolved")
    [ -n "$path" ] && [ "$path" != "not" ] || { echo "error: $bin needs $lib, which ldd cannot find" >&2; exit 1; }
    # dpkg -S reads every package's file list: ask once per library, not once per binary.
    [ -n "${seen[$path]:-}" ] && continue
    seen[$path]=1
    pkg=$(owner "$path") || { echo "error: no Debian package owns $path (needed by $bin)" >&2; exit 1; }
    pkg=${pkg%%:*}
    [ "$pkg" = libc6 ] || pkgs[$pkg]=1
  done
done
printf '%s\n' "${!pkgs[@]}" | sort
