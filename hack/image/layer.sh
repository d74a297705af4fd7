#!/usr/bin/env bash
# hack/image/layer.sh DIR OUT.tar: packs DIR into an image layer that is the same bytes for the
# same tree: entries sorted by name, every mtime set to SOURCE_DATE_EPOCH (required: not
# clamped, so a root filesystem made earlier or later, elsewhere, gives the same bytes),
# numeric owners, no atime/ctime, paths relative to DIR without a leading "./". Device nodes
# and sockets are refused: a runtime provides /dev, and a layer with nodes cannot be unpacked
# rootless. Files whose name starts with "." directly in DIR (cache bookkeeping) are left out.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: hack/image/layer.sh DIR OUT.tar" >&2; exit 2; }
dir=$1 out=$2
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set (seconds since 1970)}"
[ -d "$dir" ] || { echo "error: $dir is not a directory" >&2; exit 1; }
bad=$(find "$dir" -xdev \( -type b -o -type c -o -type s -o -type p \) -print | head -n 3)
[ -z "$bad" ] || { echo "error: $dir holds device nodes, sockets or FIFOs: $bad" >&2; exit 1; }
mapfile -t top < <(cd "$dir" && LC_ALL=C ls -A | grep -v '^\.')
[ ${#top[@]} -gt 0 ] || { echo "error: $dir is empty" >&2; exit 1; }
LC_ALL=C tar -C "$dir" --create --file "$out.tmp" --format=posix --sort=name --numeric-owner \
  --mtime="@$SOURCE_DATE_EPOCH" --one-file-system \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -- "${top[@]}"
mv "$out.tmp" "$out"
