#!/usr/bin/env bash
# Every test tier, as `npm test` runs them after its checks: unit, workflow, integration, chaos and security in one
# jest run, then e2e in its own (its servers are another kind). Beside them, on servers of its own, the integration
# tier runs against the oldest supported Temporal server (`test:integration:oldest`): the tiers wait on conditions,
# not on the clock, so the two runs share the cores. Its output is kept in a log and shown when both are done.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .dev
oldest_log=.dev/test-integration-oldest.log
set -m # the background run gets a process group of its own: a stop of this script stops it, servers and all
npm run --silent test:integration:oldest >"$oldest_log" 2>&1 &
oldest=$!
set +m
trap 'kill -- -"$oldest" 2>/dev/null' EXIT

NODE_OPTIONS=--experimental-vm-modules npx jest --selectProjects unit workflow integration chaos security
tiers=$?
e2e=1
[ "$tiers" -eq 0 ] && { npm run --silent test:e2e; e2e=$?; }

wait "$oldest"
oldest_rc=$?
trap - EXIT
echo
echo "=== the integration tier on the oldest supported Temporal server (npm run test:integration:oldest): exit $oldest_rc"
cat "$oldest_log"

echo
echo "unit, workflow, integration, chaos, security: exit $tiers; e2e: exit $e2e$([ "$tiers" -eq 0 ] || echo ' (not run)'); integration on the oldest server: exit $oldest_rc"
[ "$tiers" -eq 0 ] && [ "$e2e" -eq 0 ] && [ "$oldest_rc" -eq 0 ]
