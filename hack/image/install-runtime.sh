#!/usr/bin/env bash
# hack/image/install-runtime.sh [--dry-run] LIST...: the Dockerfile's runtime steps. Installs
# the packages named in the LIST files (from hack/image/build.sh) without recommends, empties
# the apt caches, and creates the unprivileged user tarema (uid/gid 10001, the chart's
# runAsUser) when it does not exist. --dry-run simulates the install (apt-get -s) and prints
# the user commands instead of running them: the image test runs it that way.
set -euo pipefail
DRY=0
[ "${1:-}" = --dry-run ] && { DRY=1; shift; }
[ $# -ge 1 ] || { echo "usage: hack/image/install-runtime.sh [--dry-run] LIST..." >&2; exit 2; }
UID_GID=10001
mapfile -t packages < <(cat "$@" | sed 's/#.*//' | awk 'NF {print $1}' | sort -u)
[ ${#packages[@]} -gt 0 ] || { echo "error: no packages in $*" >&2; exit 1; }
for p in "${packages[@]}"; do
  [[ $p =~ ^[a-z0-9][a-z0-9.+-]+$ ]] || { echo "error: '$p' is not a Debian package name" >&2; exit 1; }
  case $p in *-dev | gcc* | make | build-essential | pkg-config)
    echo "error: $p is a build tool or -dev package, not a runtime package" >&2; exit 1 ;;
  esac
done
export DEBIAN_FRONTEND=noninteractive
if [ $DRY = 1 ]; then
  apt-get -s install --no-install-recommends "${packages[@]}" >/dev/null
  echo "would install: ${packages[*]}"
  echo "would run: groupadd -g $UID_GID tarema; useradd -u $UID_GID -g $UID_GID -M -d /nonexistent -s /usr/sbin/nologin tarema"
  exit 0
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*
getent group tarema >/dev/null || groupadd -g "$UID_GID" tarema
getent passwd tarema >/dev/null || useradd -u "$UID_GID" -g "$UID_GID" -M -d /nonexistent -s /usr/sbin/nologin tarema
