#!/usr/bin/env bash
# Makes the Dockerfiles' base image, node:20-bookworm-slim, locally when the Docker engine does not have it:
# no image registry is reachable on machines like this project's CI (only Debian's, npm's and Go's package
# registries). Elsewhere `docker build` pulls the real image and this script has nothing to do.
#
# The stand-in: Debian bookworm from `debootstrap --variant=minbase` (Debian's packages, from this machine's
# mirror) + this machine's Node 20 and its own npm in /usr/local (where the real image has them) + the `node` user
# (uid 1000), imported with `docker import` under the real image's name. When this machine's Node trusts extra CA
# certificates (NODE_EXTRA_CA_CERTS: an egress proxy's), they are copied in, so npm inside a build reaches the
# registry as npm on the host does.
#
#   base-image.sh [IMAGE]   default node:20-bookworm-slim; nothing happens when the engine has it
set -euo pipefail
here=$(dirname "$0")
. "$here/../servers/lib.sh"

image=${1:-node:20-bookworm-slim}
[ -n "${DOCKER_HOST+set}" ] || DOCKER_HOST=$(bash "$here/dockerd.sh")
[ -n "$DOCKER_HOST" ] && export DOCKER_HOST || unset DOCKER_HOST
docker image inspect "$image" >/dev/null 2>&1 && exit 0
# A registry that answers (a user's machine) gives the real image. Here the pull fails at once (no such host).
timeout 300 docker pull -q "$image" >/dev/null 2>&1 && exit 0

IFS=- read -r major suite _ <<<"${image#*:}" # node:20-bookworm-slim → 20, bookworm
node=$(command -v node) || die "no node on PATH to put into $image"
[ "$("$node" -p 'process.versions.node.split(".")[0]')" = "$major" ] || die "$image needs Node $major; this machine's is $("$node" -v)"
npm_dir=$("$node" -p 'require("path").resolve(process.execPath, "../../lib/node_modules/npm")')
[ -f "$npm_dir/bin/npm-cli.js" ] || npm_dir=$(npm root -g)/npm
[ -f "$npm_dir/bin/npm-cli.js" ] || die "cannot find this machine's npm (looked in $npm_dir)"
[ "$(id -u)" -eq 0 ] || die "debootstrap needs root: run this as root, or pull $image from a registry"
bash "$here/../servers/debian-packages.sh" debootstrap

# The Debian mirror this machine uses (deb822 sources or a classic sources.list line), else Debian's own.
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

make_base() {
  local root; root=$(mktemp -d "${TMPDIR:-/tmp}/glidepath-rootfs.XXXXXX")
  trap 'rm -rf "$root"' RETURN
  debootstrap --variant=minbase "$suite" "$root" "$mirror"
  install -D -m 0755 "$node" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  chroot "$root" groupadd --gid 1000 node
  chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  local changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    --change "ENV NODE_VERSION=$("$node" -p process.versions.node)" --change 'CMD ["node"]')
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    install -D -m 0644 "$NODE_EXTRA_CA_CERTS" "$root$NODE_EXTRA_CA_CERTS"
    changes+=(--change "ENV NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/*
  tar -C "$root" --numeric-owner -c . | docker import "${changes[@]}" - "$image"
}

build_lock
docker image inspect "$image" >/dev/null 2>&1 || run_build "base-image-${image//[:\/]/-}" make_base
