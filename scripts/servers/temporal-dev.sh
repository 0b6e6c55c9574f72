#!/usr/bin/env bash
# Prints the path of Glidepath's Temporal dev server (temporal-dev/: the Temporal server and Web UI at the versions
# its go.mod requires), building it into the cache when missing. Honours TEMPORAL_DEV_SERVER.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${TEMPORAL_DEV_SERVER:-}" ]; then
  [ -x "$TEMPORAL_DEV_SERVER" ] || die "TEMPORAL_DEV_SERVER=$TEMPORAL_DEV_SERVER is not an executable file"
  echo "$TEMPORAL_DEV_SERVER"; exit 0
fi
src="$(cd "$(dirname "$0")/temporal-dev" && pwd)"
version=$(awk '$1 == "go.temporal.io/server" { sub(/^v/, "", $2); print $2 }' "$src/go.mod")
# Keyed by the sources too: a change to the main or to a pinned module is a new binary.
key=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)
dir="$GLIDEPATH_CACHE/temporal-server-$version-$key"
bin="$dir/glidepath-temporal-dev"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

require_go "the Temporal dev server" TEMPORAL_DEV_SERVER "a glidepath-temporal-dev binary"
build() {
  mkdir -p "$dir.tmp"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$dir.tmp/glidepath-temporal-dev" .)
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}
build_lock
[ -x "$bin" ] || run_build "temporal-server-$version" build
echo "$bin"
