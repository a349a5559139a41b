# cronwheel as a container: build the single-file executable with the locked Bun (npm dev dependency),
# then ship only that binary on a small glibc base.
#   docker build -t cronwheel .
#   docker run -p 8080:8080 -v cronwheel-data:/data cronwheel [--token ... other serve flags]

# ---- build ----------------------------------------------------------------------------------------
# Debian bookworm (glibc 2.36) so the binary and the @libsql/linux-*-gnu addon match the final image.
# Multi-arch works: npm ci installs the addon and Bun for the build platform, scripts/build.ts picks it.
FROM node:20-bookworm AS build
WORKDIR /src

COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# Only what the build reads (keeps the host's node_modules/dist out even without a .dockerignore).
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build \
 && ./dist/cronwheel --help > /dev/null \
 && mkdir -p /out/data

# ---- runtime --------------------------------------------------------------------------------------
# distroless/cc: glibc, libstdc++/libgcc, CA certificates and tzdata; no shell. Runs as uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot

COPY --from=build /src/dist/cronwheel /usr/local/bin/cronwheel
# Pre-create /data owned by the non-root user so a fresh named volume inherits that ownership.
COPY --from=build --chown=65532:65532 /out/data /data

USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
# The node drains in-flight webhooks on SIGTERM and exits 0 (give `docker stop` a generous -t).
STOPSIGNAL SIGTERM
# The embedded libSQL addon is unpacked to $TMPDIR (/tmp) at start: with --read-only, mount a tmpfs on /tmp.
ENTRYPOINT ["/usr/local/bin/cronwheel", "serve", "--host", "0.0.0.0", "--db", "file:/data/cronwheel.db"]
