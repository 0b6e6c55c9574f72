#!/usr/bin/env bash
# Prints the DOCKER_HOST of a Docker engine that answers: $DOCKER_HOST's, or the machine's own (the CLI's default),
# or else Glidepath's own dockerd, started here (detached) with its data in the cache. Machines without a
# running engine (CI, these VMs) get one; machines with one keep using it.
#
#   export DOCKER_HOST=$(bash scripts/image/dockerd.sh)   the engine to use (empty: the CLI's default)
#   bash scripts/image/dockerd.sh stop                    stops Glidepath's own dockerd, if it runs
#
# Our dockerd: data root $GLIDEPATH_CACHE/docker (images survive it, so base images are made once), socket and
# state in /run/glidepath-docker, `--iptables=false` (it leaves the machine's firewall alone: containers on its
# bridge have no way out, so builds that need the network use `--network host`), log in the cache's logs/.
# GLIDEPATH_DOCKER_STORAGE_DRIVER picks a storage driver (default: dockerd's choice, overlay2 where the kernel
# has it, else vfs).
set -euo pipefail
. "$(dirname "$0")/../servers/lib.sh"

run_dir=/run/glidepath-docker
own="unix://$run_dir/docker.sock"
pidfile="$run_dir/dockerd.pid"

answers() { # answers [HOST]: the engine at HOST (the CLI's default when empty) answers
  DOCKER_HOST=${1:-} docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

if [ "${1:-}" = stop ]; then
  [ -f "$pidfile" ] || exit 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || exit 0
  # dockerd stops its containers and its containerd first; wait for it so a restart finds the data root free.
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.2; done
  die "dockerd ($pid) did not stop within 30 s"
fi
[ $# -eq 0 ] || die "usage: dockerd.sh [stop]"

command -v docker >/dev/null 2>&1 || die "no docker CLI: bash scripts/servers/debian-packages.sh docker.io"
if [ -n "${DOCKER_HOST:-}" ]; then
  answers "$DOCKER_HOST" || die "DOCKER_HOST=$DOCKER_HOST does not answer"
  echo "$DOCKER_HOST"; exit 0
fi
if answers; then echo ""; exit 0; fi
if answers "$own"; then echo "$own"; exit 0; fi

command -v dockerd >/dev/null 2>&1 || die "no Docker engine answers and dockerd is not installed:
  bash scripts/servers/debian-packages.sh docker.io   (or set DOCKER_HOST to an engine)"
[ "$(id -u)" -eq 0 ] || die "no Docker engine answers, and starting one (dockerd) needs root: start yours, or set DOCKER_HOST"

mkdir -p "$run_dir" "$GLIDEPATH_CACHE/docker" "$GLIDEPATH_CACHE/logs"
exec 9>"$run_dir/start.lock"
flock 9 # two callers at once start one engine
if answers "$own"; then echo "$own"; exit 0; fi
logfile="$GLIDEPATH_CACHE/logs/dockerd.log"
driver=()
[ -z "${GLIDEPATH_DOCKER_STORAGE_DRIVER:-}" ] || driver=(--storage-driver "$GLIDEPATH_DOCKER_STORAGE_DRIVER")
log "starting dockerd (data $GLIDEPATH_CACHE/docker, log $logfile)"
# 9>&-: the daemon must not inherit the start lock, or the next caller would wait on it for ever.
setsid dockerd --iptables=false "${driver[@]}" --data-root "$GLIDEPATH_CACHE/docker" --exec-root "$run_dir/exec" \
  --pidfile "$pidfile" --host "$own" </dev/null >>"$logfile" 2>&1 9>&- &
daemon=$!
for _ in $(seq 1 300); do
  if answers "$own"; then echo "$own"; exit 0; fi
  kill -0 "$daemon" 2>/dev/null || { tail -n 20 "$logfile" >&2; die "dockerd exited; read $logfile"; }
  sleep 0.2
done
die "dockerd did not answer within 60 s; read $logfile"
