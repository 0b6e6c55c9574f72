#!/usr/bin/env bash
# Prints the path of the `temporal` CLI, building v1.5.1 from its Go module into the cache when none is available:
# the client people type, and (`temporal server start-dev`, server 1.29.1) the oldest server Glidepath supports,
# which CI tests against too. Honours TEMPORAL_CLI and a `temporal` on PATH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

server_ok() { # the CLI prints "... (Server 1.29.1, UI ...)"
  local v; v=$("$1" --version 2>/dev/null | sed -n 's/.*Server \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] && set -- $v && { [ "$1" -gt 1 ] || [ "$2" -ge 29 ]; }
}

if [ -n "${TEMPORAL_CLI:-}" ]; then
  server_ok "$TEMPORAL_CLI" || die "TEMPORAL_CLI=$TEMPORAL_CLI does not report a Temporal server >= 1.29"
  echo "$TEMPORAL_CLI"; exit 0
fi
dir="$GLIDEPATH_CACHE/temporal-$TEMPORAL_CLI_VERSION"
if [ -x "$dir/temporal" ]; then echo "$dir/temporal"; exit 0; fi
if command -v temporal >/dev/null 2>&1 && server_ok "$(command -v temporal)"; then command -v temporal; exit 0; fi

require_go "the temporal CLI" TEMPORAL_CLI "a temporal CLI binary whose dev server is >= 1.29"
build() {
  mkdir -p "$dir.tmp"
  GOBIN="$dir.tmp" CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go install -ldflags='-s -w' "github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_CLI_VERSION"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}
build_lock
[ -x "$dir/temporal" ] || run_build "temporal-$TEMPORAL_CLI_VERSION" build
echo "$dir/temporal"
