#!/usr/bin/env bash
# Builds the Go programs of tools/go-tools.txt into .tools/bin, each pinned to its version:
#   GOBIN=<tmp> go install -tags <tags> <package>@<version>, then moved into place.
# Cached: a program whose line is unchanged (recorded in .tools/go-tools/<name>) and whose
# binary exists is not rebuilt. Go's own module and build caches are the user's usual ones.
# Nothing here runs during tests; tests look the programs up in .tools/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.tools/bin
stamps=.tools/go-tools
mkdir -p "$bin" "$stamps"

while read -r name package tags rest; do
  case "$name" in '' | '#'*) continue ;; esac
  if [ -n "${rest:-}" ] || [[ "$package" != *@* ]]; then
    echo "go-tools: tools/go-tools.txt: bad line for $name (want: name package@version [tags])" >&2
    exit 1
  fi
  line="$name $package ${tags:-}"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamps/$name" 2>/dev/null)" = "$line" ]; then continue; fi
  if ! command -v go >/dev/null 2>&1; then
    echo "go-tools: go not found: install Go (https://go.dev/dl/) to build $name ($package)" >&2
    exit 1
  fi
  echo "go-tools: building $name from $package${tags:+ (tags $tags)} with $(go env GOVERSION)"
  tmp=$(mktemp -d "$PWD/.tools/go-build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  GOBIN="$tmp" go install -trimpath ${tags:+-tags "$tags"} "$package"
  built=("$tmp"/*)
  if [ "${#built[@]}" != 1 ] || [ ! -x "${built[0]}" ]; then
    echo "go-tools: $package did not build one program" >&2
    exit 1
  fi
  mv -f "${built[0]}" "$bin/$name"
  rm -rf "$tmp"
  trap - EXIT
  echo "$line" > "$stamps/$name"
done < tools/go-tools.txt
