# Shared helpers for hack/ scripts: cache location, progress lines, pinned versions.
# Sourced, never executed.
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HACK_DIR/.." && pwd)
# shellcheck source=versions.env
. "$HACK_DIR/versions.env"
TAREMA_CACHE=${TAREMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tarema}
TOOLS_BIN="$TAREMA_CACHE/bin"

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
