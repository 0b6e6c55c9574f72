# The Glidepath controller: `npm run image` (glidepath/controller:<version> and :dev), or
# `docker build -t glidepath/controller .`. Runs `node dist/worker/main.js` with worker/process-settings.ts (its flags:
# docs/configuration.md).
# Where no image registry answers, scripts/image/base-image.sh makes node:20-bookworm-slim locally first.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`: see .ci/run (the lock holds only one platform's optional native binaries).
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api api
COPY workflows workflows
COPY activities activities
COPY kube kube
COPY temporal temporal
COPY worker worker
COPY starter starter
COPY cli cli
COPY simulator simulator
COPY examples examples
# dist/ (compiled) + dist/workflow-bundle.js (the RolloutWorkflow bundle, so no webpack runs at start), then
# production dependencies only. The Temporal core's native library is kept for this platform alone (the package
# carries five, ≈ 110 MB of others); its Rust sources, type declarations and source maps go (≈ 70 MB).
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && cd node_modules/@temporalio/core-bridge \
 && find releases -mindepth 1 -maxdepth 1 ! -name "$(uname -m)-unknown-linux-gnu" -exec rm -rf {} + \
 && rm -rf sdk-core src bridge-macros Cargo.toml Cargo.lock \
 && cd /src && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.[cm]ts' -o -name '*.map' \) -delete

FROM node:20-bookworm-slim
# tini as PID 1: it passes SIGTERM on to node and reaps children. Node as PID 1 would ignore SIGTERM until its own
# handler is installed (the kernel gives PID 1 no default action), i.e. for the whole start-up.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 glidepath \
 && useradd --system --uid 10001 --gid glidepath --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin glidepath
WORKDIR /app
ENV NODE_ENV=production
# The process settings of worker/process-settings.ts (malloc arenas here, Node's options in the ENTRYPOINT).
ENV MALLOC_ARENA_MAX=2
ENV MALLOC_MMAP_THRESHOLD_=131072
ENV MALLOC_TRIM_THRESHOLD_=131072
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/dist dist
# Numeric, so `runAsNonRoot: true` can check it.
USER 10001:10001
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--optimize-for-size", "--max-semi-space-size=4", "dist/worker/main.js"]
