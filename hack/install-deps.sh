#!/usr/bin/env bash
# Installs every Debian package tarema needs to build, test and demo. Idempotent: installs only
# what is missing, and runs apt-get update at most once per call.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

packages=(
  build-essential pkg-config
  libprotobuf-c-dev protobuf-c-compiler
  libcurl4-openssl-dev libjansson-dev libpq-dev libyaml-dev libmicrohttpd-dev libglpk-dev
  sysbench fio util-linux
  postgresql postgresql-client
  clang-format cppcheck valgrind
  openssl curl procps psmisc jq python3 python3-yaml python3-jsonschema
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  step "all ${#packages[@]} Debian packages already installed"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
step "installing ${#missing[@]} Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null || die "apt-get update failed"
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/tarema-apt.log 2>&1 ||
  { tail -20 /tmp/tarema-apt.log >&2; die "apt-get install failed (log: /tmp/tarema-apt.log)"; }
step "Debian packages installed"
