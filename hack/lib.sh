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
