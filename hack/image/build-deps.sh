#!/usr/bin/env bash
# hack/image/build-deps.sh [--print]: installs the Debian packages the Dockerfile's build stage
# needs to compile tarema (compiler, pkg-config, the -dev packages of the libraries in the
# Makefile's PKGS plus GLPK). --print only lists them (the image test uses it).
set -euo pipefail
PACKAGES=(build-essential pkg-config ca-certificates
  libcurl4-openssl-dev libjansson-dev libpq-dev libyaml-dev libmicrohttpd-dev libglpk-dev
  libprotobuf-c-dev)
if [ "${1:-}" = --print ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: hack/image/build-deps.sh [--print]" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
rm -rf /var/lib/apt/lists/*
