#!/usr/bin/env bash
# Installs the Debian packages the test tiers and images need, when a command of theirs is missing:
#   tmux                          the CLI's pseudo-terminal tests
#   chromium                      the Web UI test (headless)
#   docker.io, containerd, runc   the image builds and the real node (e2e)
#   containernetworking-plugins   pods' networking on the real node
#   debootstrap                   the locally made base images (no image registry is reachable here)
#   docker-compose                validating and running docker-compose.yml
# Needs root (or sudo) on a Debian machine; elsewhere it says what to install and exits 1.
#
#   debian-packages.sh [PACKAGE...]   only these (default: all of the above)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# package → a file it installs (present: nothing to do)
declare -A marker=(
  [tmux]=/usr/bin/tmux
  [chromium]=/usr/bin/chromium
  [docker.io]=/usr/sbin/dockerd
  [containerd]=/usr/bin/containerd
  [runc]=/usr/sbin/runc
  [containernetworking-plugins]=/usr/lib/cni/bridge
  [debootstrap]=/usr/sbin/debootstrap
  [docker-compose]=/usr/bin/docker-compose
)
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(tmux chromium docker.io containerd runc containernetworking-plugins debootstrap docker-compose)

missing=()
for p in "${wanted[@]}"; do
  [ -n "${marker[$p]:-}" ] || die "unknown package $p (add it to ${BASH_SOURCE[0]})"
  [ -e "${marker[$p]}" ] || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
command -v apt-get >/dev/null 2>&1 || die "not a Debian machine: install ${missing[*]} by hand"
exec 8>"${TMPDIR:-/tmp}/glidepath-apt.lock"
flock 8 # two tiers' setups may ask at once; apt holds its own lock and would refuse the second
log "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
