# syntax=docker/dockerfile:1
# One image, three processes (api, worker, bridge) and the migrate command. The build steps
# are deploy/build.sh, which the repository's tests run too (test/integration/deploy): the
# build stage runs it, the runtime stage takes its output and nothing else.
#
#   docker build -t zippchat-push \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg CREATED="$(date -u +%FT%TZ)" .
#   docker run … zippchat-push dist/src/bin/api.js        (worker.js, bridge.js)
#   docker run … zippchat-push dist/src/bin/migrate.js up
#
# Node: keep NODE_VERSION equal to .nvmrc. The build stage runs on the image's own platform,
# so the native Temporal core bridge it keeps is the one the runtime stage loads.
ARG NODE_VERSION=24.19.0
# The base image by digest: the multi-platform index of node:24.19.0-trixie-slim, so that a
# rebuilt tag never changes what an image of this revision is made of. Change it with
# NODE_VERSION (`docker buildx imagetools inspect node:<version>-trixie-slim` prints it).
ARG NODE_DIGEST=sha256:85498d7fd8e2bc0b02abb1792ef27341559836236dd0b1af160fa66bb85148df

FROM node:${NODE_VERSION}-trixie-slim@${NODE_DIGEST} AS build
WORKDIR /src
COPY . .
# npm's cache survives between builds; node_modules and dist are not in the context (.dockerignore).
RUN --mount=type=cache,target=/root/.npm deploy/build.sh /app

FROM node:${NODE_VERSION}-trixie-slim@${NODE_DIGEST}
ARG NODE_VERSION
ARG NODE_DIGEST
# package.json's version (a test holds them equal); the commit and build time come from the build.
ARG VERSION=1.0.0
ARG REVISION=""
ARG CREATED=""
LABEL org.opencontainers.image.title="zippchat-push" \
      org.opencontainers.image.description="Content-free push wakes for ZippChat: FCM and UnifiedPush (RFC 8291), one Temporal workflow per device." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/zippchat/zippchat-push" \
      org.opencontainers.image.vendor="ZippChat" \
      org.opencontainers.image.base.name="docker.io/library/node:${NODE_VERSION}-trixie-slim" \
      org.opencontainers.image.base.digest="${NODE_DIGEST}"
ENV NODE_ENV=production \
    HOST=0.0.0.0
WORKDIR /app
COPY --from=build --chown=0:0 /app /app
# The node image's unprivileged user, by number so that runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 9464 9465 9466
# node is PID 1: each entry point handles SIGTERM itself (stop taking work, finish what is in
# flight, close connections, exit 0) and starts no child processes that would need reaping.
ENTRYPOINT ["node"]
CMD ["dist/src/bin/api.js"]
