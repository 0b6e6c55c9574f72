#!/usr/bin/env bash
# Builds Glidepath's images (`npm run image`), making the base image first where no registry answers
# (base-image.sh) and starting a Docker engine when none runs (dockerd.sh):
#   controller       glidepath/controller:<package.json version> and :dev, from ./Dockerfile
#   example-worker   glidepath/example-worker:1.0.0 (the samples' tag) and :dev, from examples/worker/Dockerfile
#   pause            glidepath/pause:1, the pod sandbox image of the e2e tier's node (node.sh's pause, alone)
#
#   build.sh [controller] [example-worker] [pause]   default: controller
# Docker's layer cache makes a build with nothing changed take seconds; both images share their build stage.
set -euo pipefail
here=$(dirname "$0")
root=$(cd "$here/../.." && pwd)
. "$here/../servers/lib.sh"

[ -n "${DOCKER_HOST+set}" ] || DOCKER_HOST=$(bash "$here/dockerd.sh")
[ -n "$DOCKER_HOST" ] && export DOCKER_HOST || unset DOCKER_HOST
bash "$here/base-image.sh" node:20-bookworm-slim

args=()
# Glidepath's own dockerd runs without iptables: its bridge has no way out, and the build stage needs npm's
# registry (the tini layer, Debian's).
[ "${DOCKER_HOST:-}" != unix:///run/glidepath-docker/docker.sock ] || args+=(--network host)
# Without the buildx plugin the CLI (≥ 23) would refuse or warn; the classic builder does multi-stage builds.
docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0

version=$(node -p 'require(process.argv[1]).version' "$root/package.json")
build() { # build NAME DOCKERFILE TAG...
  local name=$1 file=$2; shift 2
  local tags=() t; for t in "$@"; do tags+=(-t "$t"); done
  local start=$SECONDS logfile="$GLIDEPATH_CACHE/logs/image-$name.log"
  mkdir -p "$GLIDEPATH_CACHE/logs"
  log "building the $name image ($*; log: $logfile)"
  if ! docker build "${args[@]}" -f "$file" "${tags[@]}" "$root" >"$logfile" 2>&1; then
    tail -n 30 "$logfile" >&2
    die "building the $name image failed; read $logfile"
  fi
  log "built the $name image in $((SECONDS - start))s: $(docker image inspect -f '{{.Size}}' "$1" | awk '{ printf "%d MB", $1 / 1e6 }')"
}

pause_image() { # a one-file image: no Dockerfile, no base
  docker image inspect glidepath/pause:1 >/dev/null 2>&1 && return
  local bin; bin=$(bash "$here/../servers/node.sh")
  tar -C "$bin" -c pause | docker import --change 'ENTRYPOINT ["/pause"]' - glidepath/pause:1 >/dev/null
  log "made the pause image"
}

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(controller)
for image in "${images[@]}"; do
  case "$image" in
    controller) build controller "$root/Dockerfile" "glidepath/controller:$version" glidepath/controller:dev ;;
    example-worker) build example-worker "$root/examples/worker/Dockerfile" glidepath/example-worker:1.0.0 glidepath/example-worker:dev ;;
    pause) pause_image ;;
    *) die "unknown image $image (controller, example-worker, pause)" ;;
  esac
done
