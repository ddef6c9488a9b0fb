#!/usr/bin/env bash
# Builds what the container image holds into OUT (default: dist-image), from this checkout:
#
#   OUT/package.json, OUT/package-lock.json   as in the repository
#   OUT/node_modules/                        production dependencies only (npm ci --omit=dev)
#   OUT/dist/src/bin/{api,worker,bridge,migrate,push-admin}.js and what they import
#   OUT/dist/workflow-bundle{,-traced}.js    the workflow bundles (untraced, traced), so workers do not bundle at start
#   OUT/migrations/*.sql                     this service's migrations (not the host stand-in)
#
# The Dockerfile runs exactly this script; test/deploy runs it too and starts the
# processes from OUT. Run every command from OUT: `node dist/src/bin/api.js` (the image's
# WORKDIR is OUT). OUT must be empty or absent; nothing in the checkout is written to.
#
# Compiles in a private staging copy of the sources (src, domain, workflows, activities, temporal)
# with deploy/tsconfig.production.json, whose program is the entry points and what they
# import: development tooling that no entry point imports is not built, wherever it lives.
# Compiling needs the development dependencies: those of the checkout when they are
# installed for its lockfile, otherwise `npm ci` installs them in the staging copy (the
# image's build stage). npm honours the usual npm_config_* settings (npm_config_offline=true
# builds from npm's cache without the network, or fails).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$root/dist-image"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "$(ls -A "$out")" ]; then
  echo "build: $out is not empty (the image's contents are built into an empty directory)" >&2
  exit 1
fi
case "$out/" in
  "$root"/src/* | "$root"/domain/* | "$root"/workflows/* | "$root"/activities/* | "$root"/temporal/*)
    echo "build: $out is inside the sources" >&2
    exit 1
    ;;
esac

stage=$(mktemp -d "${TMPDIR:-/tmp}/zippchat-push-build.XXXXXX")
trap 'rm -rf "$stage"' EXIT

step() { echo "build: $*"; }

step "staging the sources in $stage"
cp -R "$root/src" "$root/domain" "$root/workflows" "$root/activities" "$root/temporal" "$stage/"
cp "$root/package.json" "$root/package-lock.json" "$root/tsconfig.json" "$stage/"
mkdir "$stage/deploy"
cp "$root/deploy/tsconfig.production.json" "$stage/deploy/"

# The checkout's dependencies serve when installed for this lockfile (tools/install.sh
# stamps node_modules with the lockfile it installed); otherwise install them in the stage.
if [ -d "$root/node_modules" ] && cmp -s "$root/package-lock.json" "$root/node_modules/.zippchat-lock-stamp"; then
  ln -s "$root/node_modules" "$stage/node_modules"
else
  step "npm ci (build dependencies)"
  (cd "$stage" && npm ci --no-audit --no-fund --loglevel=error)
fi

step "compiling the entry points (deploy/tsconfig.production.json)"
(cd "$stage" && node node_modules/typescript/bin/tsc -p deploy/tsconfig.production.json)

step "bundling the workflows"
(cd "$stage" && node dist/src/bin/bundle-workflows.js)
for bundle in workflow-bundle.js workflow-bundle-traced.js; do
  if [ ! -s "$stage/dist/$bundle" ]; then
    echo "build: the workflow bundle $bundle was not written" >&2
    exit 1
  fi
done

step "assembling $out"
cp "$root/package.json" "$root/package-lock.json" "$out/"
mkdir -p "$out/dist" "$out/migrations"
for dir in src domain workflows activities temporal; do
  if [ -d "$stage/dist/$dir" ]; then cp -R "$stage/dist/$dir" "$out/dist/"; fi
done
cp "$stage/dist/workflow-bundle.js" "$stage/dist/workflow-bundle-traced.js" "$out/dist/"
# The service's migrations only: migrations/host is the host's schema stand-in (dev, tests).
find "$root/migrations" -maxdepth 1 -type f -name '*.sql' -exec cp {} "$out/migrations/" \;

step "npm ci --omit=dev (production dependencies)"
# No install scripts: every dependency ships what it runs (the Temporal core bridge its
# prebuilt native library), and an image build should run no code it does not need.
(cd "$out" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)

# The Temporal core bridge ships a native library per platform (~30 MB each); keep this
# platform's, the one it loads (the image's build stage runs on the image's platform).
bridge="$out/node_modules/@temporalio/core-bridge"
target=$(cd "$bridge" && node -e "process.stdout.write(require('./common.js').getPrebuiltTargetName())")
if [ -d "$bridge/releases/$target" ]; then
  find "$bridge/releases" -mindepth 1 -maxdepth 1 -type d ! -name "$target" -exec rm -rf {} +
else
  echo "build: no prebuilt Temporal core bridge for $target" >&2
  exit 1
fi

for entry in api worker bridge migrate push-admin; do
  if [ ! -f "$out/dist/src/bin/$entry.js" ]; then
    echo "build: dist/src/bin/$entry.js is missing from $out" >&2
    exit 1
  fi
done
step "done: $(du -sh "$out" | cut -f1) in $out"
