#!/usr/bin/env bash
# Fetches the Go modules of deploy/kubernetes-schemas.txt into Go's module cache (a no-op when
# they are there), so that the chart's tests validate against pinned schemas without the
# network. The tests convert the files to JSON schemas themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1; then
  echo "kubernetes-schemas: go not found: install Go (https://go.dev/dl/) to fetch the schemas" >&2
  exit 1
fi
while read -r name module file rest; do
  case "$name" in '' | '#'*) continue ;; esac
  if [ -z "${file:-}" ] || [ -n "${rest:-}" ] || [[ "$module" != *@v* ]]; then
    echo "kubernetes-schemas: deploy/kubernetes-schemas.txt: bad line for $name (want: name module@version file)" >&2
    exit 1
  fi
  dir=$(go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ] || [ ! -f "$dir/$file" ]; then
    echo "kubernetes-schemas: $module has no $file" >&2
    exit 1
  fi
done < deploy/kubernetes-schemas.txt
