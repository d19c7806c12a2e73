# Playbook Operator — operator-sdk Ansible operator layout, no Docker needed.
#
# `make run` and `make test` work on a fresh machine: they create .venv/, build
# the embedded control plane from Go modules (first time only) and use it.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VERSION ?= 0.1.0
IMG ?= controller:latest
CONTAINER_TOOL ?= docker

VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# The embedded cluster writes its admin kubeconfig here (a contract: docs and tests use it).
CLUSTER_KUBECONFIG := $(CURDIR)/.cluster/kubeconfig
KUBECTL = $(shell $(PY) -m devcluster which kubectl)

# `make run` uses the configured cluster if there is one, else the embedded one.
HAVE_CLUSTER := $(shell if [ -n "$$KUBECONFIG" ] || [ -f "$$HOME/.kube/config" ]; then echo yes; fi)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: venv
venv: $(VENV)/.installed ## Create .venv/ with the runner and its dev tools.

##@ Development

.PHONY: check
check: lint test ## The gate: ruff, mypy, import contracts, then every test.

.PHONY: lint
lint: venv ## ruff, mypy --strict and the import-layer contracts.
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

.PHONY: fmt
fmt: venv ## Format the Python code.
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

.PHONY: test
test: venv cluster-binaries ## Lint, then unit and integration tests (embedded cluster started as needed).
	$(MAKE) lint
	$(BIN)/pytest

.PHONY: unit
unit: venv ## Unit tests only (no cluster).
	$(BIN)/pytest -m 'not integration'

.PHONY: bench
bench: venv cluster-binaries ## Benchmarks on the embedded cluster (prints figures).
	$(PY) bench/reconcile.py

##@ Embedded cluster

.PHONY: cluster-binaries
cluster-binaries: venv ## Build etcd, kube-apiserver, controller-manager, scheduler, kubectl, kwok (first time only).
	$(PY) -m devcluster build

.PHONY: cluster-up
cluster-up: cluster-binaries ## Start the embedded control plane; kubeconfig in .cluster/kubeconfig.
	$(PY) -m devcluster up

.PHONY: cluster-down
cluster-down: venv ## Stop every process of the embedded control plane.
	$(PY) -m devcluster down

.PHONY: cluster-status
cluster-status: venv ## Show the embedded control plane's processes and health.
	$(PY) -m devcluster status
