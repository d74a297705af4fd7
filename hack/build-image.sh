#!/usr/bin/env bash
# hack/build-image.sh [--bin DIR] [--out DIR] [COMPONENT...]: builds the tarema container
# images without a Docker daemon (`make image` runs it). COMPONENT is scheduler, labeler,
# profiler, dam or planner (default: all five, the images the chart deploys). dam and planner
# share scheduler's and labeler's two layers (same root filesystem, same binaries): only their
# config differs, so they cost no extra root filesystem or layer.
#
#   1. The runtime package list is computed from the binaries in DIR (default bin/) by
#      hack/image/runtime-deps.sh, as the Dockerfile's build stage does.
#   2. hack/image/rootfs.sh makes a Debian root filesystem with debootstrap and installs the
#      list in it with hack/image/install-runtime.sh, the Dockerfile's runtime step (cached
#      under ~/.cache/tarema/image/; the profiler's root adds hack/image/profiler-packages.txt).
#   3. Two layers, made reproducible by hack/image/layer.sh: that root filesystem, and the
#      binaries in /usr/local/bin/.
#   4. crane ($CRANE_VERSION, built from the Go module proxy) assembles each image in a
#      registry it serves on 127.0.0.1 for the build only, sets the config below, and pulls it
#      into an OCI image layout. Written to the output DIR (default build/image/):
#        oci/COMPONENT/                 the OCI image layout (crane push, skopeo oci:)
#        tarema-COMPONENT.oci.tar       the same layout as one archive (skopeo oci-archive:)
#        tarema-COMPONENT.digest        the manifest digest
#
# Image config, the same as the Dockerfile's stages and the chart's containers (the image test
# compares them): Entrypoint /usr/local/bin/tarema-COMPONENT, User 10001:10001 (user tarema,
# made by install-runtime.sh), WorkingDir /, PATH, org.opencontainers.image.* labels.
# SOURCE_DATE_EPOCH (default: the last commit's time) fixes every timestamp, so the same
# binaries and root filesystem give the same digests. An image whose inputs did not change is
# not packed again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
BIN=$REPO_ROOT/bin
OUT=$REPO_ROOT/build/image
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
COMPONENTS=("$@")
[ ${#COMPONENTS[@]} -gt 0 ] || COMPONENTS=(scheduler labeler profiler dam planner)
for c in "${COMPONENTS[@]}"; do
  case $c in scheduler | labeler | profiler | dam | planner) ;; *) die "unknown component '$c' (scheduler, labeler, profiler, dam, planner)" ;; esac
done
BINARIES=(tarema-scheduler tarema-labeler tarema-profiler tarema-sim tarema-dam tarema-planner)
for b in "${BINARIES[@]}"; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing: build the binaries first (make)"
done

# The image config of each component. UID_GID must be install-runtime.sh's user and the
# chart's podSecurityContext runAsUser/runAsGroup.
UID_GID=10001:10001
WORKDIR=/
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
entrypoint() { echo "/usr/local/bin/tarema-$1"; }
# The planner's Deployment gives its own command and arguments; --help is a harmless default.
cmd() { case $1 in scheduler) echo run ;; labeler | dam) echo serve ;; profiler | planner) echo --help ;; esac; }
# The serving port and the plain-HTTP health port (chart: scheduler.healthPort,
# labeler.healthPort, dam.port and dam.healthPort).
port() { case $1 in scheduler) echo 10260/tcp,10261/tcp ;; labeler) echo 8080/tcp,8081/tcp ;; dam) echo 8090/tcp,8091/tcp ;; profiler | planner) ;; esac; }
description() {
  case $1 in
    scheduler) echo "tarema scheduler: binds workflow task pods to the node group their TaskProfile asks for" ;;
    labeler) echo "tarema labeler: Nextflow weblog receiver, task history, TaskProfile publisher" ;;
    profiler) echo "tarema profiler: benchmarks nodes (sysbench, fio), groups and labels them" ;;
    dam) echo "tarema DAM: ranks member clusters for a job (load, node speed, predicted wait, data) and submits it" ;;
    planner) echo "tarema planner: plans workflows on node groups, reports the learned waiting times" ;;
  esac
}

VERSION=$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print $2}' "$REPO_ROOT/charts/tarema/Chart.yaml")
SOURCE_URL=$(awk '$1 == "home:" {print $2}' "$REPO_ROOT/charts/tarema/Chart.yaml")
REVISION=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$REPO_ROOT" status --porcelain 2>/dev/null)" ] || REVISION=$REVISION-dirty
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$REPO_ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
ARCH=$(dpkg --print-architecture)
start=$SECONDS

CRANE=$(bash "$HACK_DIR/image/crane.sh")
mkdir -p "$OUT/lists" "$OUT/layers" "$OUT/oci"
OUT=$(cd "$OUT" && pwd)

# 1. Package lists, named as in the Dockerfile (/usr/local/lib/tarema/ in the image).
bash "$HACK_DIR/image/runtime-deps.sh" "${BINARIES[@]/#/$BIN/}" >"$OUT/lists/runtime-packages.txt"
cp "$HACK_DIR/image/profiler-packages.txt" "$OUT/lists/runtime-packages-profiler.txt"
step "runtime packages: $(paste -sd' ' "$OUT/lists/runtime-packages.txt") (profiler adds $(sed 's/#.*//' "$OUT/lists/runtime-packages-profiler.txt" | awk NF | paste -sd' '))"

# 2. Root filesystems (cached), 3. layers. A root's layer is re-packed only when the root or
# SOURCE_DATE_EPOCH changed (its name carries both).
rootfs_layer() { # LIST... -> prints the layer path
  local root layer
  root=$(bash "$HACK_DIR/image/rootfs.sh" "$@")
  layer=$OUT/layers/$(basename "$root")-$SOURCE_DATE_EPOCH.tar
  if [ ! -e "$layer" ]; then
    step "packing $root into a layer"
    rm -f "$OUT"/layers/"$(basename "$root")"-*.tar
    bash "$HACK_DIR/image/layer.sh" "$root" "$layer"
  fi
  echo "$layer"
}
BASE_LAYER=$(rootfs_layer "$OUT/lists/runtime-packages.txt")
PROFILER_LAYER=
for c in "${COMPONENTS[@]}"; do
  [ "$c" = profiler ] && PROFILER_LAYER=$(rootfs_layer "$OUT/lists/runtime-packages.txt" "$OUT/lists/runtime-packages-profiler.txt")
done
# Layers of root filesystems this build does not use are stale.
for l in "$OUT"/layers/rootfs-*.tar; do
  [ "$l" = "$BASE_LAYER" ] || [ "$l" = "$PROFILER_LAYER" ] || rm -f "$l"
done
APP=$OUT/app
rm -rf "$APP"
mkdir -p "$APP/usr/local/bin"
cp "${BINARIES[@]/#/$BIN/}" "$APP/usr/local/bin/"
chmod 0755 "$APP"/usr/local/bin/*
bash "$HACK_DIR/image/layer.sh" "$APP" "$OUT/layers/app.tar"

# 4. Assemble with crane in a throwaway loopback registry.
REG_PID=
REG_LOG=$OUT/registry.log
stop_registry() {
  [ -n "$REG_PID" ] || return 0
  kill "$REG_PID" 2>/dev/null || true
  wait "$REG_PID" 2>/dev/null || true # 143: it ended on our SIGTERM
  REG_PID=
}
trap stop_registry EXIT
start_registry() {
  [ -n "$REG_PID" ] && return
  "$CRANE" registry serve --address 127.0.0.1:0 >"$REG_LOG" 2>&1 &
  REG_PID=$!
  local i port=
  for i in $(seq 1 100); do
    port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$REG_LOG" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || die "crane registry serve did not start: $(cat "$REG_LOG")"
  REG=127.0.0.1:$port
}

for c in "${COMPONENTS[@]}"; do
  rootfs=$BASE_LAYER
  [ "$c" = profiler ] && rootfs=$PROFILER_LAYER
  args=(--entrypoint "$(entrypoint "$c")" --cmd "$(cmd "$c")" --user "$UID_GID" --workdir "$WORKDIR"
    --env "PATH=$IMAGE_PATH" --set-platform "linux/$ARCH"
    --label "org.opencontainers.image.title=tarema-$c"
    --label "org.opencontainers.image.description=$(description "$c")"
    --label "org.opencontainers.image.version=$VERSION"
    --label "org.opencontainers.image.revision=$REVISION"
    --label "org.opencontainers.image.created=$CREATED"
    --label "org.opencontainers.image.source=$SOURCE_URL"
    --label "org.opencontainers.image.url=$SOURCE_URL")
  [ -n "$(port "$c")" ] && args+=(--exposed-ports "$(port "$c")")
  # Same layers and config as the last build: nothing to do.
  # The root layer's name is its content key (root filesystem key and SOURCE_DATE_EPOCH).
  inputs=$( (basename "$rootfs"; sha256sum <"$OUT/layers/app.tar"; printf '%s\n' "$CRANE_VERSION" "${args[@]}") | sha256sum | cut -c1-64)
  archive=$OUT/tarema-$c.oci.tar
  if [ -e "$archive" ] && [ "$(cat "$OUT/oci/.inputs-$c" 2>/dev/null)" = "$inputs" ]; then
    step "tarema-$c: unchanged ($(cat "$OUT/tarema-$c.digest"))"
    continue
  fi
  start_registry
  ref=$REG/tarema/$c:$VERSION
  step "assembling tarema/$c:$VERSION with crane"
  "$CRANE" append --oci-empty-base -f "$rootfs" -f "$OUT/layers/app.tar" -t "$ref" >/dev/null 2>>"$REG_LOG" ||
    die "crane append failed for $c: $(tail -n 5 "$REG_LOG")"
  "$CRANE" mutate "$ref" "${args[@]}" -t "$ref" >/dev/null 2>>"$REG_LOG" ||
    die "crane mutate failed for $c: $(tail -n 5 "$REG_LOG")"
  # crane leaves "created" at the zero time: set it, and say in the history what made each
  # layer (docker history shows it).
  "$CRANE" config "$ref" 2>>"$REG_LOG" |
    jq -c --arg t "$CREATED" --arg base "debootstrap --variant=minbase $DEBIAN_SUITE; hack/image/install-runtime.sh $(basename "$rootfs" .tar | sed 's/-[0-9]*$//')" \
      '.created = $t | .history = [{created: $t, created_by: $base}, {created: $t, created_by: "COPY bin/tarema-* /usr/local/bin/"}]' |
    "$CRANE" edit config "$ref" -t "$ref" >/dev/null 2>>"$REG_LOG" ||
    die "crane edit config failed for $c: $(tail -n 5 "$REG_LOG")"
  layout=$OUT/oci/$c
  rm -rf "$layout"
  "$CRANE" pull --format=oci "$ref" "$layout" 2>>"$REG_LOG" || die "crane pull failed for $c: $(tail -n 5 "$REG_LOG")"
  # Name the image in the layout as skopeo and podman expect (oci-archive:FILE:TAG); the
  # registry's address is the build's own, so it stays out.
  jq -c --arg tag "$VERSION" --arg name "tarema/$c:$VERSION" \
    '.manifests[0].annotations = {"org.opencontainers.image.ref.name": $tag, "io.containerd.image.name": $name}' \
    "$layout/index.json" >"$layout/index.json.tmp" && mv "$layout/index.json.tmp" "$layout/index.json"
  bash "$HACK_DIR/image/layer.sh" "$layout" "$archive"
  jq -r '.manifests[0].digest' "$layout/index.json" >"$OUT/tarema-$c.digest"
  echo "$inputs" >"$OUT/oci/.inputs-$c"
done
stop_registry
for c in "${COMPONENTS[@]}"; do
  printf '%-9s %s  %s  %s MB\n' "$c" "$OUT/tarema-$c.oci.tar" "$(cat "$OUT/tarema-$c.digest")" \
    "$(($(stat -c %s "$OUT/tarema-$c.oci.tar") / 1048576))"
done
step "images built in $((SECONDS - start)) s (push: docs/operations.md, section Images)"
