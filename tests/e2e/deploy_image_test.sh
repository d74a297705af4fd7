#!/usr/bin/env bash
# deploy_image_test.sh: the container images, built here without a Docker engine.
# Part 1, the Dockerfile's build steps run on the host: hack/image/build.sh compiles the
# binaries and computes the runtime package list; every shared library the binaries load must
# come from a package in that list or one apt installs with it; the list holds no build tools;
# the runtime install step simulates cleanly; the Dockerfile is multi-stage on Debian bookworm
# and runs only hack/image scripts.
# Part 2, `make image` (hack/build-image.sh): builds the OCI images (debootstrap root, cached),
# a second build is quick and changes nothing, a rebuild gives the same digest; the OCI layouts
# and archives are well-formed and crane reads them back from a registry; each image's config
# (Entrypoint, Cmd, User, WorkingDir, ports, labels) equals the Dockerfile's stage and the
# chart's container; each image's layers, unpacked, run every binary as the image's user on a
# read-only root (--help, and a real command each: tarema-sim on a scenario, tarema-profiler
# bench and group, tarema-labeler migrate and ingest into the run's PostgreSQL,
# tarema-scheduler explain against the run's API server), and ldd finds every library inside.
# The dam and planner images share the scheduler's two layers (only the config differs): the
# test checks that they do and runs their entrypoint there instead of unpacking them again, so
# they add seconds, not another root filesystem.
# e2e-run: early (tests/run.sh starts it before the short tests: it takes well over a minute)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Objects: this checkout's own build tree (not a cache shared by every checkout, where another
# branch's objects were linked in), the one `make test` has just built bin/ from, so
# hack/image/build.sh's make links the binaries from up-to-date objects instead of compiling
# every changed file a second time into a tree of its own. The same Makefile and flags: the
# binaries are the ones bin/ holds. (Not under `make test-sanitize`: SANITIZE_E2E leaves this
# test out.)
case ${O:-build} in /*) BUILD_TREE=$O ;; *) BUILD_TREE=$REPO_ROOT/${O:-build} ;; esac
IMG=$BUILD_TREE/image
export O=$BUILD_TREE

if bash "$REPO_ROOT/hack/image/build.sh" "$WORK/out" >"$WORK/build.log" 2>&1; then
  pass "hack/image/build.sh builds the binaries and the package lists"
else
  fail "hack/image/build.sh" "$(tail -n 15 "$WORK/build.log")"
  summary
  exit 1
fi
for b in tarema-scheduler tarema-labeler tarema-profiler tarema-dam tarema-planner; do
  [ -x "$WORK/out/bin/$b" ] && "$WORK/out/bin/$b" --help >/dev/null 2>&1 &&
    pass "$b built and runs (--help)" || fail "$b built and runs (--help)"
done
LIST=$WORK/out/runtime-packages.txt
PLIST=$WORK/out/runtime-packages-profiler.txt
for p in libcurl4 libjansson4 libpq5 libyaml-0-2 libmicrohttpd12; do
  grep -qx "$p" "$LIST" && pass "runtime list names $p" || fail "runtime list names $p" "list: $(paste -sd' ' "$LIST")"
done
grep -qx sysbench "$PLIST" && grep -qx fio "$PLIST" && pass "profiler image adds sysbench and fio" ||
  fail "profiler image adds sysbench and fio" "$(cat "$PLIST")"
bad=$(grep -E -- '-dev$|^(gcc|g\+\+|make|build-essential|pkg-config|cpp)' "$LIST" "$PLIST" || true)
[ -z "$bad" ] && pass "no build tools or -dev packages at runtime" || fail "no build tools at runtime" "$bad"

# Closure: every library ldd resolves is owned by a listed package or a dependency apt pulls
# in with them (recursively), or by libc6 which every Debian image has.
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances $(cat "$LIST") libc6 2>/dev/null | grep -v '^ ' | sed 's/:.*//' | sort -u)
# candidates LIB: the names dpkg may know LIB by (merged /usr: with and without /usr, the link
# and its target), in the order they are tried.
candidates() {
  local p=$1 real
  real=$(readlink -f "$p")
  printf '%s\n' "$p" "$real" "/usr$p" "${p#/usr}" "/usr$real" "${real#/usr}"
}
# Every library path each binary loads (192 paths, 41 distinct), then one dpkg -S for every
# candidate name of every distinct path: dpkg reads its database once instead of up to six times
# per path (a fifth of a second each). Each path's owner is still its first candidate dpkg knows.
for b in "$WORK"/out/bin/tarema-*; do
  ldd "$b" | awk -v b="$(basename "$b")" '$2 == "=>" && $3 ~ /^\// {print b, $3}'
done >"$WORK/libs.txt"
declare -A OWNER_OF
while IFS= read -r line; do
  # "pkg:arch: /path" (a diverted path: "pkg1, pkg2: /path", kept whole as before)
  path=${line#*: } pkg=${line%%: *}
  [ -n "$path" ] && [ -z "${OWNER_OF[$path]+set}" ] && OWNER_OF[$path]=${pkg%%:*}
done < <(awk '{print $2}' "$WORK/libs.txt" | sort -u | while read -r l; do candidates "$l"; done | sort -u |
  xargs -r dpkg -S 2>/dev/null)
owner() {
  local c
  while read -r c; do
    [ -n "$c" ] && [ -n "${OWNER_OF[$c]:-}" ] && { echo "${OWNER_OF[$c]}"; return; }
  done < <(candidates "$1")
}
declare -A IN_CLOSURE PKG_OF
while read -r p; do [ -n "$p" ] && IN_CLOSURE[$p]=1; done <<<"$closure"
missing=()
nlibs=0
while read -r b lib; do
  nlibs=$((nlibs + 1))
  [ -n "${PKG_OF[$lib]+set}" ] || PKG_OF[$lib]=$(owner "$lib")
  pkg=${PKG_OF[$lib]}
  [ -n "$pkg" ] && [ -n "${IN_CLOSURE[$pkg]:-}" ] || missing+=("$b: $lib (${pkg:-no package})")
done <"$WORK/libs.txt"
[ ${#missing[@]} = 0 ] && pass "all $nlibs shared libraries of the binaries are provided by the runtime packages" ||
  fail "shared libraries provided by the runtime packages" "$(printf '%s\n' "${missing[@]}" | sort -u | head)"

out=$(bash "$REPO_ROOT/hack/image/install-runtime.sh" --dry-run "$LIST" "$PLIST" 2>&1) &&
  grep -q 'useradd -u 10001' <<<"$out" && pass "install-runtime.sh --dry-run resolves every package, creates uid 10001" ||
  fail "install-runtime.sh --dry-run" "$out"
printf 'libcurl4\nlibjansson-dev\n' >"$WORK/bad.txt"
out=$(bash "$REPO_ROOT/hack/image/install-runtime.sh" --dry-run "$WORK/bad.txt" 2>&1) &&
  fail "install-runtime.sh refuses a -dev package" "accepted: $out" ||
  { grep -q 'libjansson-dev' <<<"$out" && pass "install-runtime.sh refuses a -dev package, naming it" || fail "install-runtime.sh names the bad package" "$out"; }
printf 'libcurl4\nno-such-package-tarema\n' >"$WORK/bad2.txt"
bash "$REPO_ROOT/hack/image/install-runtime.sh" --dry-run "$WORK/bad2.txt" >/dev/null 2>&1 &&
  fail "install-runtime.sh fails on an unknown package" || pass "install-runtime.sh fails on an unknown package"

# The Dockerfile itself.
DF=$REPO_ROOT/Dockerfile
froms=$(grep -cE '^FROM ' "$DF")
[ "$froms" -ge 3 ] && grep -qE '^ARG DEBIAN_TAG=bookworm' "$DF" && grep -qE '^FROM debian:\$\{DEBIAN_TAG\} AS build' "$DF" &&
  grep -qE '^FROM debian:\$\{DEBIAN_TAG\} AS runtime' "$DF" && pass "Dockerfile: multi-stage on Debian bookworm ($froms stages)" ||
  fail "Dockerfile: multi-stage on Debian bookworm"
runs=$(grep -E '^RUN ' "$DF" | grep -vE '^RUN bash (hack/image/|/usr/local/lib/tarema/)[a-z-]+\.sh' || true)
[ -z "$runs" ] && pass "Dockerfile: every RUN step is a tested hack/image script" || fail "Dockerfile RUN steps" "$runs"
for t in scheduler labeler profiler dam planner; do
  grep -qE "^FROM runtime AS $t\$" "$DF" && pass "Dockerfile: target $t" || fail "Dockerfile: target $t"
done
# The last USER of each component stage is the chart's runAsUser, never root.
users=$(awk '/^FROM /{stage=$NF} /^USER /{u[stage]=$2} END{for (s in u) print s, u[s]}' "$DF" | sort)
chart_uid=$(awk '/^podSecurityContext:/{f=1} f && /runAsUser:/{print $2; exit}' "$REPO_ROOT/charts/tarema/values.yaml")
bad=$(awk -v uid="$chart_uid" '$2 != uid":"uid' <<<"$users")
[ -n "$chart_uid" ] && [ -z "$bad" ] && pass "Dockerfile: every stage ends as user $chart_uid (the chart's runAsUser)" ||
  fail "Dockerfile users match the chart" "users: $users; chart runAsUser: $chart_uid"
grep -qE 'build-deps|-dev' <(sed -n '/AS runtime/,$p' "$DF") && fail "runtime stages install no build packages" ||
  pass "runtime stages install no build packages"
for x in .git build/ bin/; do
  grep -qx -- "$x" "$REPO_ROOT/.dockerignore" || { fail ".dockerignore leaves out $x"; continue; }
  pass ".dockerignore leaves out $x"
done

# ---------------------------------------------------------------------------------------------
# Part 2: the daemonless image build and the images themselves.
CRANE=$TOOLS_BIN/crane
VERSION=$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print $2}' "$REPO_ROOT/charts/tarema/Chart.yaml")
COMPONENTS=(scheduler labeler profiler dam planner)
BINARIES=(tarema-scheduler tarema-labeler tarema-profiler tarema-sim tarema-dam tarema-planner)
SDE=$(git -C "$REPO_ROOT" log -1 --format=%ct)
export SOURCE_DATE_EPOCH=$SDE

# First build: from scratch on a new machine (debootstrap, apt, crane build); cached after.
if bash "$REPO_ROOT/hack/build-image.sh" --bin "$BIN" --out "$IMG" >"$WORK/image1.log"; then
  pass "hack/build-image.sh builds ${COMPONENTS[*]}"
else
  fail "hack/build-image.sh" "$(tail -n 15 "$WORK/image1.log")"
  summary
  exit 1
fi
t0=$SECONDS
bash "$REPO_ROOT/hack/build-image.sh" --bin "$BIN" --out "$IMG" >"$WORK/image2.log" 2>&1
rc=$? secs=$((SECONDS - t0))
n=$(grep -c ': unchanged (sha256:' "$WORK/image2.log")
[ $rc = 0 ] && [ "$n" = ${#COMPONENTS[@]} ] && [ $secs -lt 60 ] && pass "second build: every image unchanged, ${secs} s" ||
  fail "second build is cached" "exit $rc, $n unchanged, ${secs} s: $(tail -n 5 "$WORK/image2.log")"
# Reproducible: a fresh output directory (layers tarred again, crane again) gives the same digest.
if bash "$REPO_ROOT/hack/build-image.sh" --bin "$BIN" --out "$WORK/repro" scheduler >"$WORK/image3.log" 2>&1 &&
  [ "$(cat "$WORK/repro/tarema-scheduler.digest")" = "$(cat "$IMG/tarema-scheduler.digest")" ] &&
  cmp -s "$WORK/repro/tarema-scheduler.oci.tar" "$IMG/tarema-scheduler.oci.tar"; then
  pass "rebuilt from the same inputs: same digest $(cat "$IMG/tarema-scheduler.digest"), same archive bytes"
else
  fail "reproducible build" "$(cat "$WORK/repro/tarema-scheduler.digest" 2>/dev/null) vs $(cat "$IMG/tarema-scheduler.digest"): $(tail -n 3 "$WORK/image3.log")"
fi
rm -rf "$WORK/repro"

# The chart, rendered, and the Dockerfile: what each says about each component's container.
HELM=$(command -v helm || echo "$TOOLS_BIN/helm")
"$HELM" template tarema "$REPO_ROOT/charts/tarema" --namespace tarema --set dam.enabled=true \
  --set planner.enabled=true >"$WORK/chart.yaml" 2>"$WORK/helm.err" ||
  fail "helm template" "$(cat "$WORK/helm.err")"
python3 - "$WORK/chart.yaml" >"$WORK/chart.txt" 2>&1 <<'PY'
import json, sys, yaml
# component image command runAsUser:runAsGroup containerPort, for every tarema container
for d in yaml.safe_load_all(open(sys.argv[1])):
    if not d: continue
    spec = d.get("spec", {})
    if d["kind"] == "CronJob": spec = spec["jobTemplate"]["spec"]
    ps = spec.get("template", {}).get("spec")
    if not ps: continue
    sc = ps.get("securityContext", {})
    for c in ps["containers"]:
        if not c["image"].startswith("tarema/"): continue
        comp = c["image"].split("/")[1].split(":")[0]
        ports = ",".join("%s/tcp" % p["containerPort"] for p in c.get("ports", [])) or "-"
        print(comp, c["image"], json.dumps(c.get("command")), "%s:%s" % (sc.get("runAsUser"), sc.get("runAsGroup")), ports)
PY
DF=$REPO_ROOT/Dockerfile
# stage_value STAGE KEYWORD: the last KEYWORD line of STAGE, else of the stage it is FROM.
stage_value() {
  awk -v st="$1" -v kw="$2" '
    /^FROM / {cur = $NF; parent[cur] = $2}
    $1 == kw {sub("^" kw "[ \t]+", ""); val[cur] = $0}
    END {s = st; while (s != "" && !(s in val)) s = parent[s]; print val[s]}' "$DF"
}

for c in "${COMPONENTS[@]}"; do
  layout=$IMG/oci/$c
  archive=$IMG/tarema-$c.oci.tar
  # OCI layout: version file, index naming the tag, manifest and config of the OCI media types,
  # every blob's content matching its digest.
  probs=()
  [ "$(jq -r .imageLayoutVersion "$layout/oci-layout" 2>/dev/null)" = 1.0.0 ] || probs+=("oci-layout")
  [ "$(jq -r '.schemaVersion, .mediaType' "$layout/index.json" | paste -sd' ')" = "2 application/vnd.oci.image.index.v1+json" ] || probs+=("index.json type")
  [ "$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$layout/index.json")" = "$VERSION" ] || probs+=("ref.name is not $VERSION")
  mdig=$(jq -r '.manifests[0].digest' "$layout/index.json")
  man=$layout/blobs/sha256/${mdig#sha256:}
  [ "$(jq -r .mediaType "$man")" = application/vnd.oci.image.manifest.v1+json ] || probs+=("manifest media type")
  [ "$(jq -r .config.mediaType "$man")" = application/vnd.oci.image.config.v1+json ] || probs+=("config media type")
  [ "$(jq -r '[.layers[].mediaType] | unique | join(",")' "$man")" = application/vnd.oci.image.layer.v1.tar+gzip ] || probs+=("layer media types")
  for b in "$layout"/blobs/sha256/*; do
    [ "$(sha256sum <"$b" | cut -d' ' -f1)" = "$(basename "$b")" ] || probs+=("blob $(basename "$b") does not match its digest")
  done
  nl=$(jq '.layers | length' "$man")
  [ "$nl" = 2 ] || probs+=("$nl layers, want 2 (root filesystem, binaries)")
  [ ${#probs[@]} = 0 ] && pass "$c: OCI layout well-formed ($nl layers, manifest $mdig)" || fail "$c: OCI layout" "${probs[*]}"
  # The archive is that layout, sorted, every mtime SOURCE_DATE_EPOCH.
  want=$(cd "$layout" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort)
  got=$(tar -tf "$archive" | sed 's|/$||')
  times=$(tar -tvf "$archive" --full-time --utc | awk '{print $4 "T" $5}' | sort -u)
  [ "$want" = "$got" ] && [ "$times" = "$(date -u -d "@$SDE" +%Y-%m-%dT%H:%M:%S)" ] &&
    pass "$c: archive holds the layout in name order, all mtimes SOURCE_DATE_EPOCH" ||
    fail "$c: archive" "entries equal: $([ "$want" = "$got" ] && echo yes || echo no); mtimes: $times"
done

# crane reads the layouts back: push each to a loopback registry (as docs/operations.md says
# to push to a real one), validate, and compare what the registry serves with the layout.
"$CRANE" registry serve --address 127.0.0.1:0 >"$WORK/reg.log" 2>&1 &
REG_PID=$!
trap 'kill $REG_PID 2>/dev/null; rm -rf --one-file-system "$WORK"' EXIT
wait_for 10 grep -q 'serving on port' "$WORK/reg.log"
REG=127.0.0.1:$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$WORK/reg.log" | head -n 1)
# layers_of C: the layer digests of C's manifest in its layout, one a line.
layers_of() { jq -r '.layers[].digest' "$IMG/oci/$1/blobs/sha256/$(jq -r '.manifests[0].digest' "$IMG/oci/$1/index.json" | cut -d: -f2)"; }
for c in "${COMPONENTS[@]}"; do
  layout=$IMG/oci/$c
  ref=$REG/tarema/$c:$VERSION
  mdig=$(jq -r '.manifests[0].digest' "$layout/index.json")
  # A full validate downloads and decompresses every layer to check it against the config's
  # diff_ids. labeler, dam and planner carry the scheduler's very layers (same digests, checked
  # in full just before): for them the layer bytes are not digested again (--fast), and their
  # config must name the same diff_ids the scheduler's full validation proved right.
  vargs=() vnote=""
  if [ "$c" != scheduler ] && [ -s "$WORK/config.scheduler.json" ] && [ "$(layers_of "$c")" = "$(layers_of scheduler)" ]; then
    vargs=(--fast) vnote=" (the scheduler's layers, same diff_ids)"
  fi
  out=$("$CRANE" push "$layout" "$ref" 2>&1) && "$CRANE" validate "${vargs[@]}" --remote "$ref" >"$WORK/validate.$c" 2>&1 &&
    [ "$("$CRANE" digest "$ref" 2>&1)" = "$mdig" ] &&
    "$CRANE" manifest "$ref" | cmp -s - "$layout/blobs/sha256/${mdig#sha256:}" &&
    "$CRANE" config "$ref" >"$WORK/config.$c.json" &&
    { [ ${#vargs[@]} = 0 ] || [ "$(jq -c .rootfs "$WORK/config.$c.json")" = "$(jq -c .rootfs "$WORK/config.scheduler.json")" ]; } &&
    pass "$c: crane push, validate$vnote, digest, manifest and config read back the same image" ||
    fail "$c: crane reads the image" "$out $(cat "$WORK/validate.$c" 2>/dev/null)"
done
kill $REG_PID 2>/dev/null

# The image config against the Dockerfile and the chart.
chart_user=$(awk '/^podSecurityContext:/{f=1} f && /runAsUser:/{u=$2} f && /runAsGroup:/{print u ":" $2; exit}' "$REPO_ROOT/charts/tarema/values.yaml")
created=$(date -u -d "@$SDE" +%Y-%m-%dT%H:%M:%SZ)
head=$(git -C "$REPO_ROOT" rev-parse HEAD)
for c in "${COMPONENTS[@]}"; do
  cfg=$WORK/config.$c.json
  [ -s "$cfg" ] || { fail "$c: image config" "crane config gave nothing"; continue; }
  ep=$(jq -c .config.Entrypoint "$cfg")
  cmd=$(jq -c .config.Cmd "$cfg")
  user=$(jq -r .config.User "$cfg")
  wd=$(jq -r .config.WorkingDir "$cfg")
  ports=$(jq -r '.config.ExposedPorts // {} | keys | join(",")' "$cfg")
  [ "$ep" = "[\"/usr/local/bin/tarema-$c\"]" ] && pass "$c: Entrypoint $ep" || fail "$c: Entrypoint" "$ep"
  # Dockerfile stage of the same name.
  d_ep=$(stage_value "$c" ENTRYPOINT | jq -c . 2>/dev/null)
  d_cmd=$(stage_value "$c" CMD | jq -c . 2>/dev/null)
  d_user=$(stage_value "$c" USER)
  d_wd=$(stage_value "$c" WORKDIR)
  d_ports=$(stage_value "$c" EXPOSE | tr -s ' ' '\n' | grep . | sed 's#$#/tcp#' | sort | paste -sd,)
  [ "$ep" = "$d_ep" ] && [ "$cmd" = "$d_cmd" ] && [ "$user" = "$d_user" ] && [ "$wd" = "$d_wd" ] && [ "$ports" = "$d_ports" ] &&
    pass "$c: Dockerfile stage $c has the same ENTRYPOINT, CMD, USER $user, WORKDIR $wd, EXPOSE '$ports'" ||
    fail "$c: image config equals the Dockerfile" "image: $ep $cmd $user $wd '$ports'; Dockerfile: $d_ep $d_cmd $d_user $d_wd '$d_ports'"
  # Every chart container of this component's image.
  rows=$(awk -v c="$c" '$1 == c' "$WORK/chart.txt")
  bad=$(awk -v img="tarema/$c:$VERSION" -v ep="$ep" -v u="$user" '$2 != img || $3 != ep || $4 != u' <<<"$rows")
  [ -n "$rows" ] && [ -z "$bad" ] && [ "$user" = "$chart_user" ] &&
    pass "$c: chart runs image tarema/$c:$VERSION with command $ep as $chart_user ($(wc -l <<<"$rows") containers)" ||
    fail "$c: chart equals the image" "image $ep as $user; chart values $chart_user; chart: ${rows:-no container} $(cat "$WORK/helm.err")"
  if [ "$c" != profiler ] && [ "$c" != planner ]; then
    cports=$(awk '{print $5}' <<<"$rows" | sort -u | paste -sd,)
    [ "$cports" = "$ports" ] && pass "$c: chart's containerPort is the exposed port $ports" || fail "$c: ports" "chart $cports, image $ports"
  fi
  [ "$(jq -r '.annotations // {} | .["io.containerd.image.name"]' <(jq '.manifests[0]' "$IMG/oci/$c/index.json"))" = "tarema/$c:$VERSION" ] &&
    pass "$c: layout names the image tarema/$c:$VERSION (the chart's default)" || fail "$c: layout image name"
  labels=$(jq -c .config.Labels "$cfg")
  jq -e --arg v "$VERSION" --arg t "$created" --arg h "$head" --arg c "$c" '
    .["org.opencontainers.image.title"] == "tarema-" + $c and .["org.opencontainers.image.version"] == $v and
    .["org.opencontainers.image.created"] == $t and (.["org.opencontainers.image.revision"] | startswith($h)) and
    (.["org.opencontainers.image.source"] | startswith("https://")) and (.["org.opencontainers.image.description"] | length > 10)' \
    <<<"$labels" >/dev/null && [ "$(jq -r .created "$cfg")" = "$created" ] &&
    jq -e '.config.Env | index("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")' "$cfg" >/dev/null &&
    [ "$(jq -r '.os + "/" + .architecture' "$cfg")" = "linux/$(dpkg --print-architecture)" ] &&
    pass "$c: labels org.opencontainers.image.* (version $VERSION, created $created, revision), Env PATH, linux/$(dpkg --print-architecture)" ||
    fail "$c: labels and created" "$labels created=$(jq -r .created "$cfg")"
done
grep -qE "^ARG DEBIAN_TAG=$DEBIAN_SUITE(-slim)?\$" "$DF" && pass "Dockerfile DEBIAN_TAG and the image build's DEBIAN_SUITE name one suite ($DEBIAN_SUITE)" ||
  fail "Dockerfile DEBIAN_TAG is DEBIAN_SUITE ($DEBIAN_SUITE)" "$(grep '^ARG DEBIAN_TAG' "$DF")"

# Each image's layers unpacked, in order, into a root; the commands run as the image's user on
# that root mounted read-only (as the chart's readOnlyRootFilesystem), with /proc, /sys
# (read-only), the host's /dev and a writable /tmp (the chart's emptyDir), as a container
# runtime gives them, in a private mount namespace.
# in_root ROOT TMP CMD...
in_root() {
  local root=$1 tmp=$2 user=$3; shift 3
  unshare -m -- sh -c 'r=$1 t=$2 u=$3; shift 3
    mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" && mount -t proc proc "$r/proc" &&
    mount -t sysfs -o ro sysfs "$r/sys" && mount --bind /dev "$r/dev" && mount --bind "$t" "$r/tmp" &&
    exec chroot --userspec="$u" "$r" /usr/bin/env -i HOME=/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"' \
    sh "$root" "$tmp" "$user" "$@"
}
for c in "${COMPONENTS[@]}"; do
  layout=$IMG/oci/$c
  root=$WORK/root-$c tmp=$WORK/tmp-$c
  if [ "$c" = dam ] || [ "$c" = planner ]; then
    # Same layers as the scheduler's image (unpacked and checked above): its entrypoint, as
    # its config's user, on that root. Different layers would be a build change to test in full.
    user=$(jq -r .config.User "$WORK/config.$c.json")
    ep=$(jq -r '.config.Entrypoint[0]' "$WORK/config.$c.json")
    [ "$(layers_of "$c")" = "$(layers_of scheduler)" ] &&
      pass "$c: the scheduler image's two layers (root filesystem, binaries), its own config" ||
      fail "$c: shares the scheduler's layers" "$(layers_of "$c" | paste -sd' ') vs $(layers_of scheduler | paste -sd' ')"
    out=$(in_root "$WORK/root-scheduler" "$WORK/tmp-scheduler" "$user" "$ep" --help 2>&1)
    rc=$?
    [ "$user" = "$chart_user" ] && [ $rc = 0 ] && grep -q "usage: tarema-$c" <<<"$out" &&
      pass "$c: Entrypoint $ep --help runs as $user on the read-only root" ||
      fail "$c: Entrypoint --help as $user" "exit $rc: $(head -n 3 <<<"$out")"
    continue
  fi
  mkdir -p "$root" "$tmp"
  chmod 1777 "$tmp"
  mdig=$(jq -r '.manifests[0].digest' "$layout/index.json")
  ok=1
  for l in $(jq -r '.layers[].digest' "$layout/blobs/sha256/${mdig#sha256:}"); do
    tar -xzf "$layout/blobs/sha256/${l#sha256:}" -C "$root" --numeric-owner || ok=0
  done
  user=$(jq -r .config.User "$WORK/config.$c.json")
  [ $ok = 1 ] && grep -q "^tarema:x:${user%%:*}:${user##*:}:" "$root/etc/passwd" && grep -q "^tarema:x:${user##*:}:" "$root/etc/group" &&
    pass "$c: layers unpack; /etc/passwd has tarema as $user (the config's User)" ||
    fail "$c: unpack, user $user in /etc/passwd" "$(grep tarema "$root/etc/passwd" 2>/dev/null)"
  # The image user can run but not replace the binaries.
  perms=$(stat -c '%n %u %a' "${BINARIES[@]/#/$root/usr/local/bin/}" 2>&1 | awk '$2 != 0 || $3 != 755')
  [ -z "$perms" ] && pass "$c: ${BINARIES[*]} in /usr/local/bin, root-owned, mode 755" || fail "$c: binaries" "$perms"
  # ldd inside the root: every library of every binary (and the benchmarks) found there.
  elves=("${BINARIES[@]/#//usr/local/bin/}")
  [ "$c" = profiler ] && elves+=(/usr/bin/sysbench /usr/bin/fio)
  missing=""
  nlib=0
  for e in "${elves[@]}"; do
    out=$(chroot "$root" /usr/bin/ldd "$e" 2>&1) || missing+=" $e: ldd failed: $out;"
    nlib=$((nlib + $(grep -c '=> /' <<<"$out")))
    grep -q 'not found' <<<"$out" && missing+=" $e: $(grep 'not found' <<<"$out" | paste -sd,);"
  done
  [ -z "$missing" ] && pass "$c: ldd in the image finds all $nlib libraries of ${#elves[@]} programs" || fail "$c: ldd in the image" "$missing"
  for b in "${BINARIES[@]}"; do
    out=$(in_root "$root" "$tmp" "$user" "/usr/local/bin/$b" --help 2>&1)
    rc=$?
    [ $rc = 0 ] && grep -q "usage: $b" <<<"$out" && pass "$c: $b --help runs as $user on the read-only root" ||
      fail "$c: $b --help as $user" "exit $rc: $(head -n 3 <<<"$out")"
  done
done

# One real command of each binary, in the image that deploys it.
R=$WORK/root-scheduler T=$WORK/tmp-scheduler U=$(jq -r .config.User "$WORK/config.scheduler.json")
cp "$REPO_ROOT/tests/fixtures/sim/tiny-cluster.yaml" "$REPO_ROOT/tests/fixtures/sim/tiny-workload.yaml" "$T/"
want=$("$BIN/tarema-sim" --cluster "$T/tiny-cluster.yaml" --workload "$T/tiny-workload.yaml" --policy all --json 2>&1)
got=$(in_root "$R" "$T" "$U" tarema-sim --cluster /tmp/tiny-cluster.yaml --workload /tmp/tiny-workload.yaml --policy all --json 2>&1)
rc=$?
# wall_s is the simulator's own run time: the only field that may differ.
nowall='del(.. | .wall_s?)'
[ $rc = 0 ] && [ -n "$got" ] && [ "$(jq -S "$nowall" <<<"$got")" = "$(jq -S "$nowall" <<<"$want")" ] &&
  pass "scheduler image: tarema-sim simulates tests/fixtures/sim/tiny-* (every policy), the same JSON as on the host but its run time" ||
  fail "scheduler image: tarema-sim" "exit $rc: $(head -c 300 <<<"$got")"
if [ -n "${KUBECONFIG:-}" ] && [ -r "$KUBECONFIG" ]; then
  cp "$KUBECONFIG" "$T/kubeconfig"
  chmod 644 "$T/kubeconfig"
  out=$(in_root "$R" "$T" "$U" tarema-scheduler explain default/tarema-image-test-no-such-pod --kubeconfig /tmp/kubeconfig 2>&1)
  rc=$?
  [ $rc != 0 ] && grep -qi 'not found\|404' <<<"$out" && ! grep -qiE 'certificate|ssl|tls|resolve|connect' <<<"$out" &&
    pass "scheduler image: tarema-scheduler explain reaches the API server over TLS (pod not found, as it should)" ||
    fail "scheduler image: tarema-scheduler explain" "exit $rc: $out"
else
  fail "scheduler image: tarema-scheduler explain" "no KUBECONFIG (run with hack/cluster.sh up and its env)"
fi

R=$WORK/root-labeler T=$WORK/tmp-labeler U=$(jq -r .config.User "$WORK/config.labeler.json")
if [ -n "${DATABASE_URL:-}" ]; then
  cp "$REPO_ROOT/tests/fixtures/labeler/eager_trace_raw.txt" "$T/trace.txt"
  wf=image-test-$$
  out=$(in_root "$R" "$T" "$U" tarema-labeler migrate --db "$DATABASE_URL" 2>&1 &&
    in_root "$R" "$T" "$U" tarema-labeler ingest --db "$DATABASE_URL" --workflow "$wf" --run image-run /tmp/trace.txt 2>&1)
  rc=$?
  stored=$(psql "$DATABASE_URL" -Atc "select count(*) from information_schema.tables where table_schema not in ('pg_catalog','information_schema')" 2>/dev/null)
  [ $rc = 0 ] && grep -qE 'stored [1-9][0-9]* task runs' <<<"$out" &&
    pass "labeler image: tarema-labeler migrate and ingest a trace into PostgreSQL ($(tail -n 1 <<<"$out" | cut -c1-80))" ||
    fail "labeler image: tarema-labeler migrate, ingest" "exit $rc: $out (tables: $stored)"
else
  fail "labeler image: tarema-labeler ingest" "no DATABASE_URL (run with hack/postgres.sh up and its env)"
fi

R=$WORK/root-profiler T=$WORK/tmp-profiler U=$(jq -r .config.User "$WORK/config.profiler.json")
mkdir -p "$T/scratch" && chmod 777 "$T/scratch"
out=$(in_root "$R" "$T" "$U" tarema-profiler bench --quick --node image-n1 --dir /tmp/scratch --fio-size 32m --fio-runtime 1 -o /tmp/n1.json 2>&1)
rc=$?
[ $rc = 0 ] && jq -e '.node == "image-n1" and .cpu_single_eps > 0 and .mem_mibps > 0 and .rand_read_iops > 0 and (.fio_version | startswith("fio-"))' "$T/n1.json" >/dev/null &&
  pass "profiler image: tarema-profiler bench --quick runs sysbench and fio as $U ($(jq -r '"\(.cpu_single_eps) events/s, \(.rand_read_iops) rand-read IOPS"' "$T/n1.json"))" ||
  fail "profiler image: tarema-profiler bench" "exit $rc: $(tail -n 5 <<<"$out")"
# Grouping that profile with three more nodes made from it (two twice as fast).
if [ -s "$T/n1.json" ]; then
  jq '.node = "image-n2"' "$T/n1.json" >"$T/n2.json"
  for n in 3 4; do
    jq --arg n "image-n$n" '.node = $n | .cpu_single_eps *= 2 | .cpu_multi_eps *= 2 | .mem_mibps *= 2 | .seq_read_iops *= 2 | .seq_write_iops *= 2 | .rand_read_iops *= 2 | .rand_write_iops *= 2' \
      "$T/n1.json" >"$T/n$n.json"
  done
  got=$(in_root "$R" "$T" "$U" tarema-profiler group --seed 1 /tmp/n1.json /tmp/n2.json /tmp/n3.json /tmp/n4.json -o /tmp/groups.json 2>&1)
  rc=$?
  "$BIN/tarema-profiler" group --seed 1 "$T"/n{1,2,3,4}.json -o "$T/groups-host.json" >/dev/null 2>&1
  [ $rc = 0 ] && [ -s "$T/groups.json" ] && cmp -s "$T/groups.json" "$T/groups-host.json" &&
    pass "profiler image: tarema-profiler group writes the same groups as on the host ($(jq -c '[.. | objects | select(has("nodes")) | .nodes | length]' "$T/groups.json" 2>/dev/null))" ||
    fail "profiler image: tarema-profiler group" "exit $rc: $got"
fi
summary
