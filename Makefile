# zippchat-push — the two commands: `make dev` and `make test`. See README.md.
# The commands themselves are npm scripts (package.json); this file adds what npm cannot do
# for itself: install the pinned tools (Node included) first, and run the dev stack.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# The pinned tools, Node among them when the machine's is too old (tools/install.sh), win.
export PATH := $(CURDIR)/.tools/bin:$(PATH)
STACK := node dist-tools/devstack/cli.js

.PHONY: help install go-tools kubernetes-schemas build image-dir dev up down test lint typecheck bench clean

help:
	@echo "make dev    start everything, run the live demo, serve until Ctrl-C"
	@echo "make test   install what is missing, start private services, run every test tier"
	@echo "make up     start everything in the background (returns when ready); make down stops it"
	@echo "make bench  run the benchmarks"
	@echo "make image-dir  build what the container image holds into dist-image/ (deploy/build.sh, as the Dockerfile does)"

install:
	@tools/install.sh

go-tools:
	@tools/go-tools.sh

# The Kubernetes schemas the Helm chart's tests validate against (deploy/kubernetes-schemas.txt).
kubernetes-schemas:
	@deploy/kubernetes-schemas.sh

# The production build (dist/: src, workflows, activities, temporal) and the tooling's
# (dist-tools/: the dev stack, the simulator, the benchmarks, the capacity model in capacity/).
build: install
	@npm run -s build
	@npm run -s build-tools

image-dir: install
	@rm -rf dist-image
	@deploy/build.sh dist-image

dev: build
	@$(STACK) dev

up: build
	@$(STACK) up

down:
	@if [ -f dist-tools/devstack/cli.js ]; then $(STACK) down; else echo "down: nothing built, nothing running"; fi

lint: install
	@npm run -s lint

typecheck: install
	@npm run -s typecheck

test: install go-tools kubernetes-schemas
	@npm run -s lint
	@npm run -s typecheck
	@npm test -s

bench: install
	@npm run -s bench

clean: down
	@# As root the dev cluster's files sit under the system temp dir, linked from .dev/postgres.
	@if [ -L .dev/postgres ]; then rm -rf "$$(readlink -f .dev/postgres)"; fi
	rm -rf dist dist-tools dist-image .dev
