#!/usr/bin/env bash
# hack/nextflow.sh: an unmodified Nextflow for tarema's tests and for trying tarema by hand,
# resolved from Maven Central with this machine's Maven and Java and cached like the control
# plane, so that only the first call needs the network.
#
#   install [VERSION...]      fetch each version (default: every pinned one) unless cached
#   run VERSION ARGS...       run `nextflow ARGS...` of that version (installs it first)
#   dir VERSION               print the version's cache directory (lib/ holds the jars)
#   versions                  print the pinned versions, one a line
#
# Pinned versions and why these two:
#   24.10.0  the Kubernetes executor is in Nextflow's core jar (24.04 to 24.10; from 25.04 it is
#            the nf-k8s plugin, fetched at run time) and has the `schedulerName` pod option
#            (24.04 and later). Used with the k8s executor.
#   22.10.7  the last release line whose weblog is built in: from 23.10 `-with-weblog` loads the
#            nf-weblog plugin at run time, which cannot work offline.
#
# Layout: $TAREMA_CACHE/nextflow/VERSION/lib/*.jar (io.nextflow:nextflow:VERSION and every
# runtime dependency, copied by maven-dependency-plugin), VERSION/home (NXF_HOME), and
# $TAREMA_CACHE/nextflow/m2 (Maven's local repository). A version counts as installed once
# VERSION/.complete exists; it is written last, after the launcher printed its version.
#
# Nextflow is started as its own launcher script starts it: `java -cp 'lib/*'
# nextflow.cli.Launcher` with the same --add-opens flags, and with NXF_OFFLINE=true so that it
# never tries to download a plugin or check for a newer release.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PINNED=(24.10.0 22.10.7)
NF_CACHE=$TAREMA_CACHE/nextflow
M2=$NF_CACHE/m2
DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.6.1

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

valid_version() { [[ $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+(-edge)?$ ]] || die "'$1' is not a Nextflow version (e.g. 24.10.0)"; }

# Java 11+ and Maven from Debian when missing (openjdk-17-jre-headless is Debian 12's).
need_java_maven() {
  local pkgs=()
  command -v java >/dev/null || pkgs+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || pkgs+=(maven)
  if [ ${#pkgs[@]} -gt 0 ]; then
    step "installing ${pkgs[*]} from Debian"
    local sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq || die "apt-get update failed: install ${pkgs[*]} by hand"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null ||
      die "apt-get install ${pkgs[*]} failed"
  fi
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
  [ -n "$v" ] && [ "$v" -ge 11 ] || die "Nextflow needs Java 11 or later; 'java -version' says: $(java -version 2>&1 | head -n 1)"
}

# The JVM flags Nextflow's own launcher script adds on Java 9 and later.
JAVA_FLAGS=(-Dfile.encoding=UTF-8 -Djava.awt.headless=true)
for p in java.lang java.io java.nio java.net java.util java.util.concurrent.locks \
  java.util.concurrent.atomic java.nio.file.spi sun.nio.ch sun.nio.fs \
  sun.net.www.protocol.http sun.net.www.protocol.https sun.net.www.protocol.ftp \
  sun.net.www.protocol.file jdk.internal.misc jdk.internal.vm java.util.regex; do
  JAVA_FLAGS+=("--add-opens=java.base/$p=ALL-UNNAMED")
done

launch() { # VERSION ARGS...
  local dir=$NF_CACHE/$1
  shift
  mkdir -p "$dir/home"
  # NXF_OFFLINE: no plugin downloads, no update checks. NXF_HOME: plugins, secrets and the
  # capsule cache of this version only, never the user's ~/.nextflow.
  NXF_HOME=$dir/home NXF_OFFLINE=true NXF_DISABLE_CHECK_LATEST=true \
    exec java "${JAVA_FLAGS[@]}" ${NXF_OPTS:-} -cp "$dir/lib/*" nextflow.cli.Launcher "$@"
}

install_one() { # VERSION
  local v=$1 dir=$NF_CACHE/$1 tmp log
  [ -f "$dir/.complete" ] && return 0
  need_java_maven
  mkdir -p "$NF_CACHE"
  LOCK=$NF_CACHE/.lock-$v
  lock_instance 900 "the Nextflow $v download"
  [ -f "$dir/.complete" ] && return 0
  step "resolving io.nextflow:nextflow:$v and its dependencies from Maven Central (once)"
  tmp=$(mktemp -d "$NF_CACHE/.fetch-$v.XXXXXX")
  log=$NF_CACHE/fetch-$v.log
  cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.tarema.hack</groupId>
  <artifactId>nextflow-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.nextflow</groupId>
      <artifactId>nextflow</artifactId>
      <version>$v</version>
    </dependency>
  </dependencies>
</project>
EOF
  if ! (cd "$tmp" && mvn -B -ntp -Dmaven.repo.local="$M2" "$DEP_PLUGIN:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$tmp/lib") >"$log" 2>&1; then
    rm -rf "$tmp"
    if grep -qiE 'Could not transfer|Unknown host|Connection refused|timed out|Network is unreachable' "$log"; then
      die "Maven Central is unreachable, so Nextflow $v cannot be installed: $(grep -m1 -iE 'Could not transfer|Unknown host|Connection refused|timed out|unreachable' "$log") (full log: $log)"
    fi
    die "Maven could not resolve io.nextflow:nextflow:$v: $(grep -m1 ERROR "$log") (full log: $log)"
  fi
  [ -f "$tmp/lib/nextflow-$v.jar" ] || { rm -rf "$tmp"; die "Maven finished but nextflow-$v.jar is not among the copied jars (log: $log)"; }
  rm -rf "$dir"
  mkdir -p "$dir"
  mv "$tmp/lib" "$dir/lib"
  rm -rf "$tmp"
  # The launcher must start and report the version asked for before the cache counts.
  local out
  out=$( (launch "$v" -version) 2>&1) || die "Nextflow $v does not start: $(echo "$out" | tail -n 3)"
  grep -q "version $v" <<<"$out" || die "Nextflow in $dir reports another version: $(echo "$out" | grep -m1 version)"
  touch "$dir/.complete"
  drop_lock
  step "Nextflow $v ready in $dir ($(ls "$dir/lib" | wc -l) jars)"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
  install)
    [ $# -gt 0 ] || set -- "${PINNED[@]}"
    for v in "$@"; do valid_version "$v"; install_one "$v"; done
    ;;
  run)
    [ $# -ge 1 ] || usage
    valid_version "$1"
    install_one "$1"
    launch "$@"
    ;;
  dir)
    [ $# = 1 ] || usage
    valid_version "$1"
    echo "$NF_CACHE/$1"
    ;;
  versions) printf '%s\n' "${PINNED[@]}" ;;
  -h | --help | help) usage 0 ;;
  *) usage ;;
esac
