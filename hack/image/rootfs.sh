#!/usr/bin/env bash
# hack/image/rootfs.sh LIST...: prints the path of a cached Debian root filesystem (a
# directory) holding the runtime packages the LIST files name, installed the way the
# Dockerfile's runtime stage installs them: hack/image/install-runtime.sh run inside it, with the
# lists at /usr/local/lib/tarema/. No Docker daemon is needed: the base is a debootstrap
# minbase of $DEBIAN_SUITE (hack/versions.env), slimmed like Debian's -slim images.
#
# Two cache levels under $TAREMA_CACHE/image/ (debootstrap and apt download from the mirror
# only on a miss):
#   base-KEY/     debootstrap output, slimmed; KEY = suite, mirror, variant, debootstrap
#                 version and the functions below that shape it
#   rootfs-KEY/   base + runtime packages; KEY = base key, the lists' contents and
#                 install-runtime.sh
# Package versions are whatever the mirror had when an entry was made (.packages records
# them); delete $TAREMA_CACHE/image to take newer ones (security updates).
# Each holds .packages (name=version of every installed package) and is complete only when
# .done exists, so an interrupted build is redone, never used. Entries unused for
# TAREMA_IMAGE_CACHE_DAYS (default 14) are removed. Needs root (chroot, mount).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
[ $# -ge 1 ] || { echo "usage: hack/image/rootfs.sh LIST..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "building a root filesystem needs root (debootstrap, chroot)"
for l in "$@"; do [ -s "$l" ] || die "package list $l is missing or empty"; done
IMG_CACHE=$TAREMA_CACHE/image
VARIANT=minbase
INSTALL=$HACK_DIR/image/install-runtime.sh

# The Debian mirror this machine's apt uses (first "URIs:" or "deb" line naming a debian
# archive that is not the security one), unless TAREMA_DEBIAN_MIRROR says otherwise.
mirror() {
  [ -n "${TAREMA_DEBIAN_MIRROR:-}" ] && { echo "$TAREMA_DEBIAN_MIRROR"; return; }
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -nE 's/^(URIs:|deb)[[:space:]]+(\[[^]]*\][[:space:]]+)?(https?:\/\/[^[:space:]]+\/debian)\/?([[:space:]].*)?$/\3/p' |
    head -n 1)
  echo "${m:-http://deb.debian.org/debian}"
}

ensure_debootstrap() {
  command -v debootstrap >/dev/null && return
  step "installing debootstrap (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q debootstrap >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q debootstrap; }
}

# Mount points inside a root being built, unmounted on any exit.
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
  [ -n "${TMPROOT:-}" ] && rm -rf --one-file-system "$TMPROOT"
  return 0
}
trap cleanup EXIT

# /proc and a private /dev (tmpfs with the usual nodes, never the host's /dev bind-mounted: a
# cleanup must not be able to reach the host's devices) for apt inside the root.
mount_sys() {
  local r=$1
  mount -t proc proc "$r/proc" && MOUNTS+=("$r/proc")
  mount -t tmpfs -o mode=0755,size=1m tmpfs "$r/dev" && MOUNTS+=("$r/dev")
  mknod -m 666 "$r/dev/null" c 1 3
  mknod -m 666 "$r/dev/zero" c 1 5
  mknod -m 666 "$r/dev/full" c 1 7
  mknod -m 666 "$r/dev/random" c 1 8
  mknod -m 666 "$r/dev/urandom" c 1 9
  mknod -m 666 "$r/dev/tty" c 5 0
  ln -s /proc/self/fd "$r/dev/fd"
  ln -s /proc/self/fd/0 "$r/dev/stdin"
  ln -s /proc/self/fd/1 "$r/dev/stdout"
  ln -s /proc/self/fd/2 "$r/dev/stderr"
}
umount_sys() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" || die "cannot unmount ${MOUNTS[$i]}"; done
  MOUNTS=()
}

# What Debian's -slim images leave out (docs but copyrights, man pages, locales): the same
# dpkg path excludes, so packages installed later stay slim too, and the files already there
# removed.
slim() {
  local r=$1
  mkdir -p "$r/etc/dpkg/dpkg.cfg.d"
  cat >"$r/etc/dpkg/dpkg.cfg.d/tarema-slim" <<'EOF'
# tarema images: no documentation or translations (as Debian's -slim images).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  find "$r/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$r"/usr/share/{man,groff,info,lintian,linda}/*
  find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
}

# What no image layer should carry: package lists and caches, logs, the build machine's
# identity and resolver, device nodes (the runtime provides /dev).
clean_root() {
  local r=$1
  rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old \
    "$r"/var/lib/dpkg/*-old "$r"/var/cache/ldconfig/aux-cache "$r"/etc/resolv.conf "$r"/etc/hostname
  find "$r/var/log" -type f -delete
  find "$r/dev" -xdev -mindepth 1 -delete
  find "$r/tmp" "$r/var/tmp" "$r/run" -mindepth 1 -delete 2>/dev/null || true
  : >"$r/etc/machine-id"
  mkdir -p "$r/var/lib/apt/lists/partial" "$r/var/cache/apt/archives/partial"
}

# The same sources as Debian's images: the release, its updates and security.
write_sources() {
  local r=$1
  rm -f "$r/etc/apt/sources.list"
  cat >"$r/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $DEBIAN_SUITE $DEBIAN_SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: $DEBIAN_SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

# Account files carry the day they were written ("last password change" in shadow) and
# backups of themselves: blank the day (no account in the image has a password) and drop the
# backups, so roots made on different days are the same bytes.
normalize_accounts() {
  local r=$1
  sed -i -E 's/^([^:]*:[^:]*:)[0-9]*:/\1:/' "$r/etc/shadow"
  rm -f "$r"/etc/{passwd,group,shadow,gshadow,subuid,subgid}-
}

packages_of() { chroot "$1" dpkg-query -W -f '${binary:Package}=${Version}\n' | sort; }

MIRROR=$(mirror)
ensure_debootstrap
DBS_VERSION=$(dpkg-query -W -f '${Version}' debootstrap 2>/dev/null || debootstrap --version)
# The base key covers what makes the base: the functions applied to it, not the rest of this
# script (editing the runtime step must not redo the debootstrap).
BASE_KEY=$(printf '%s\n' "$DEBIAN_SUITE" "$MIRROR" "$VARIANT" "$DBS_VERSION" "$(declare -f write_sources slim clean_root)" |
  sha256sum | cut -c1-16)
BASE=$IMG_CACHE/base-$BASE_KEY
mkdir -p "$IMG_CACHE"
exec 9>"$IMG_CACHE/.lock"
flock -w 1800 9 || die "another image build has held $IMG_CACHE/.lock for 30 minutes"

if [ ! -e "$BASE/.done" ]; then
  step "debootstrap $VARIANT $DEBIAN_SUITE from $MIRROR into $BASE (once per cache key; downloads about 30 MB)"
  rm -rf --one-file-system "$BASE"
  mkdir -p "$IMG_CACHE/debs"
  debootstrap --variant="$VARIANT" --cache-dir="$IMG_CACHE/debs" "$DEBIAN_SUITE" "$BASE" "$MIRROR" 2>&1 |
    grep --line-buffered -E '^(I: (Retrieving|Validating|Extracting|Installing|Configuring|Base)|W:|E:)' |
    awk '/^I: (Retrieving|Validating|Extracting|Installing|Configuring) / {n++; if (n % 10) next} {print; fflush()}' >&2 ||
    true
  [ -x "$BASE/usr/bin/apt-get" ] || die "debootstrap of $DEBIAN_SUITE from $MIRROR failed (see $BASE/debootstrap/debootstrap.log)"
  write_sources "$BASE"
  slim "$BASE"
  clean_root "$BASE"
  packages_of "$BASE" >"$BASE/.packages"
  touch "$BASE/.done"
fi

ROOT_KEY=$(printf '%s\n' "$BASE_KEY" "$(cat "$@")" "$(sha256sum <"$INSTALL")" "$(declare -f mount_sys clean_root normalize_accounts)" | sha256sum | cut -c1-16)
ROOT=$IMG_CACHE/rootfs-$ROOT_KEY
if [ ! -e "$ROOT/.done" ]; then
  step "installing the runtime packages ($(sed 's/#.*//' "$@" | awk NF | paste -sd' ')) into $ROOT"
  rm -rf --one-file-system "$ROOT"
  TMPROOT=$ROOT.tmp
  rm -rf --one-file-system "$TMPROOT"
  cp -a "$BASE" "$TMPROOT"
  rm -f "$TMPROOT/.done" "$TMPROOT/.packages"
  lib=$TMPROOT/usr/local/lib/tarema
  mkdir -p "$lib"
  cp "$INSTALL" "$lib/install-runtime.sh"
  args=()
  for l in "$@"; do
    cp "$l" "$lib/$(basename "$l")"
    args+=("/usr/local/lib/tarema/$(basename "$l")")
  done
  cp -L /etc/resolv.conf "$TMPROOT/etc/resolv.conf"
  mount_sys "$TMPROOT"
  # The Dockerfile's runtime step, verbatim: same script, same lists, same place.
  chroot "$TMPROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash /usr/local/lib/tarema/install-runtime.sh "${args[@]}" 2>&1 |
    grep --line-buffered -E '^(Get:|Setting up|E:|W:|Err)' | grep --line-buffered -v 'Can not write log' |
    awk '/^(Get|Setting up)/ {n++; if (n % 10) next} {print; fflush()}' >&2 || true
  chroot "$TMPROOT" getent passwd tarema >/dev/null || die "install-runtime.sh failed inside $TMPROOT (no user tarema)"
  for l in "$@"; do
    while read -r p; do
      chroot "$TMPROOT" dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        die "package $p (from $l) is not installed in $TMPROOT"
    done < <(sed 's/#.*//' "$l" | awk 'NF {print $1}')
  done
  umount_sys
  clean_root "$TMPROOT"
  normalize_accounts "$TMPROOT"
  packages_of "$TMPROOT" >"$TMPROOT/.packages"
  touch "$TMPROOT/.done"
  mv "$TMPROOT" "$ROOT"
  TMPROOT=
fi
# .used marks the last use; entries unused for TAREMA_IMAGE_CACHE_DAYS (default 14) go.
touch "$BASE/.used" "$ROOT/.used"
find "$IMG_CACHE" -mindepth 1 -maxdepth 1 -type d \( -name 'base-*' -o -name 'rootfs-*' \) |
  while read -r d; do
    [ "$d" = "$BASE" ] || [ "$d" = "$ROOT" ] && continue
    [ -n "$(find "$d/.used" -mtime -"${TAREMA_IMAGE_CACHE_DAYS:-14}" 2>/dev/null)" ] && continue
    step "removing $d (unused for ${TAREMA_IMAGE_CACHE_DAYS:-14} days)"
    rm -rf --one-file-system "$d"
  done
echo "$ROOT"
