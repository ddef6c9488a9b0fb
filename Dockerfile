# syntax=docker/dockerfile:1
# One image, three processes (api, worker, bridge) and the migrate command. The build steps
# are deploy/build.sh, which the repository's tests run too (test/integration/deploy): the
# build stage runs it, the runtime stage takes its output and nothing else.
#
#   docker build -t zippchat-push .
#   docker run … zippchat-push dist/src/bin/api.js        (worker.js, bridge.js)
#   docker run … zippchat-push dist/src/bin/migrate.js up
#
# Node: keep NODE_VERSION equal to .nvmrc. The build stage runs on the image's own platform,
# so the native Temporal core bridge it keeps is the one the runtime stage loads.
ARG NODE_VERSION=24.19.0

FROM node:${NODE_VERSION}-trixie-slim AS build
WORKDIR /src
COPY . .
# npm's cache survives between builds; node_modules and dist are not in the context (.dockerignore).
RUN --mount=type=cache,target=/root/.npm deploy/build.sh /app

FROM node:${NODE_VERSION}-trixie-slim
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
