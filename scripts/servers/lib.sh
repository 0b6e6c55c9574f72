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
  Install Go (https://go.dev/dl, >= 1.24), or set $2 to $3."
}

# run_build NAME CMD...: runs a build with output to a log; on failure names the log.
run_build() {
  local name=$1; shift
  mkdir -p "$GLIDEPATH_CACHE/logs"
  local logfile="$GLIDEPATH_CACHE/logs/$name.log"
  log "building $name (first time only, several minutes; log: $logfile)"
  local start=$SECONDS
  if ! ("$@") >"$logfile" 2>&1; then
    tail -n 20 "$logfile" >&2
    die "building $name failed; read $logfile"
  fi
  log "built $name in $((SECONDS - start))s"
}
