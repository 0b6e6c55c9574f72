# Shared helpers for the server scripts: the binary cache and build logging.
# Binaries live outside the work tree, keyed by version, and are reused when present.
GLIDEPATH_CACHE="${GLIDEPATH_CACHE:-$HOME/.cache/glidepath}"
TEMPORAL_CLI_VERSION="1.5.1"
ETCD_VERSION="3.5.21"
KUBE_VERSION="1.35.4"

log() { echo "[glidepath] $*" >&2; }
die() { echo "[glidepath] error: $*" >&2; exit 1; }

require_go() {
  command -v go >/dev/null 2>&1 || die "$1 is not cached and Go is not installed to build it.
  Install Go (https://go.dev/dl, >= 1.26.8: the Temporal server's go.mod asks it), or set $2 to $3."
}

# build_lock: one build into the cache at a time (`npm run servers:build` and a test run may start together and
# would otherwise build the same binaries side by side); held until the script exits. Re-check after it.
build_lock() {
  [ -z "${GLIDEPATH_BUILD_LOCKED:-}" ] || return 0
  command -v flock >/dev/null 2>&1 || return 0
  mkdir -p "$GLIDEPATH_CACHE"
  exec 9>"$GLIDEPATH_CACHE/.build.lock"
  if ! flock -n 9; then
    log "another build into $GLIDEPATH_CACHE is running; waiting for it to finish"
    flock 9
  fi
  GLIDEPATH_BUILD_LOCKED=1
}

# run_build NAME CMD...: runs a build with output to a log; on failure names the log.
run_build() {
  local name=$1; shift
  mkdir -p "$GLIDEPATH_CACHE/logs"
  local logfile="$GLIDEPATH_CACHE/logs/$name.log"
  log "building $name (first time only, several minutes; log: $logfile)"
  local start=$SECONDS rc
  # Not `if ! (...)`: errexit is ignored inside a condition, so a failed step would go unnoticed.
  set +e
  (set -e; "$@") >"$logfile" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$logfile" >&2
    die "building $name failed; read $logfile"
  fi
  log "built $name in $((SECONDS - start))s"
}
