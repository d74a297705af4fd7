# Shared helpers for hack/ scripts: cache location, progress lines, pinned versions.
# Sourced, never executed.
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HACK_DIR/.." && pwd)
# shellcheck source=versions.env
. "$HACK_DIR/versions.env"
TAREMA_CACHE=${TAREMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tarema}

# The Kubernetes version of this run: TAREMA_K8S_VERSION from the environment, else the default
# in versions.env. Only the versions listed there are built and tested; anything else is refused
# here, before a 40-minute build of a version nobody checked.
KUBERNETES_VERSION=${TAREMA_K8S_VERSION:-$KUBERNETES_VERSION}
case " $KUBERNETES_VERSIONS " in
  *" $KUBERNETES_VERSION "*) ;;
  *)
    printf 'error: Kubernetes %s is not supported (TAREMA_K8S_VERSION); choose one of: %s\n' \
      "$KUBERNETES_VERSION" "$KUBERNETES_VERSIONS" >&2
    exit 1
    ;;
esac
# k8s.io/kubernetes v1.X.Y is released with its staging modules (k8s.io/api, client-go, ...) at
# v0.X.Y.
KUBERNETES_STAGING_VERSION=v0.${KUBERNETES_VERSION#v1.}
# The minor version as a number (35, 36, 37): what scripts and tests compare against.
KUBERNETES_MINOR=${KUBERNETES_VERSION#v1.}
KUBERNETES_MINOR=${KUBERNETES_MINOR%%.*}
export KUBERNETES_VERSION KUBERNETES_STAGING_VERSION KUBERNETES_MINOR

# Cache layout (hack/build-controlplane.sh writes it; hack/cluster.sh, hack/build-e2e.sh and the
# tests read it):
#   $TAREMA_CACHE/bin/                       tools whose version does not follow Kubernetes:
#                                            etcd, kwok, helm, crane
#   $TAREMA_CACHE/k8s/<KUBERNETES_VERSION>/bin/
#                                            kube-apiserver, kube-scheduler,
#                                            kube-controller-manager, kubectl of that version;
#                                            anything else built from k8s.io/kubernetes at that
#                                            version (the upstream e2e suite) belongs here too
#   $TAREMA_CACHE/build/k8s-<version>/       the Go wrapper module that builds that version
#   $TAREMA_CACHE/build/<name>.log           the last build log of each tool
# Every binary sits next to a marker .<name>.version holding the version it was built at, so a
# directory is trusted only when its markers agree. Versions live side by side: switching
# TAREMA_K8S_VERSION back and forth never rebuilds. (Before this layout the Kubernetes binaries
# sat in $TAREMA_CACHE/bin; build-controlplane.sh hard-links a matching old build into the
# per-version directory instead of rebuilding it.)
TOOLS_BIN="$TAREMA_CACHE/bin"
K8S_BIN="$TAREMA_CACHE/k8s/$KUBERNETES_VERSION/bin"
# kubectl of the chosen version: what tests and scripts drive the local cluster with.
KUBECTL_BIN="$K8S_BIN/kubectl"

step() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Instance locks: one command at a time per instance (two test runs starting the same instance,
# say). LOCK names the lock file, which lives outside the instance's state dir (`down` removes
# that). lock_instance WAIT_SECONDS WHAT takes it; drop_lock deletes the lock file of an instance
# that does not exist (any more), and only its holder may.
lock_instance() {
  mkdir -p "$(dirname "$LOCK")"
  while :; do
    exec 8>>"$LOCK"
    flock -w "$1" 8 || die "another command on $2 has held its lock for $1 s"
    # `down` deletes the lock file while holding it; a lock on a deleted file guards nothing.
    [ "$(stat -c %i "$LOCK" 2>/dev/null)" = "$(stat -L -c %i "/proc/$$/fd/8")" ] && { HAVE_LOCK=1; return 0; }
    exec 8>&-
  done
}
drop_lock() { [ "${HAVE_LOCK:-0}" = 1 ] && rm -f "$LOCK" || true; }
