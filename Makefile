# Playbook Operator — operator-sdk Ansible operator layout, no Docker needed.
#
# `make run` and `make test` work on a fresh machine: they create .venv/, build
# the embedded control plane from Go modules (first time only) and use it.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VERSION ?= 0.1.0
IMG ?= controller:latest
CONTAINER_TOOL ?= docker
# Extra `$(CONTAINER_TOOL) build` flags (e.g. --network=host), and the base image
# (the Dockerfile's PYTHON_IMAGE build arg) when not the Dockerfile's default.
CONTAINER_BUILD_FLAGS ?=
PYTHON_IMAGE ?=
# podman reads this containers.conf (runc, no default ulimits: see the file) instead of
# the host's; PODMAN_CONF= keeps the host's own configuration.
PODMAN_CONF ?= $(CURDIR)/hack/image/containers.conf
ifeq ($(notdir $(CONTAINER_TOOL)),podman)
ifneq ($(strip $(PODMAN_CONF)),)
export CONTAINERS_CONF := $(PODMAN_CONF)
endif
endif

VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# ansible-core lines (runner/ansible/lines.py: which are supported, on which Pythons, until
# when): .venv/ is on the newest line this host's Pythons allow. hack/venv.py picks $PYTHON,
# else python3.14..3.12 on PATH, else pyenv's newest; only a Python 3.11 falls back to 2.19,
# with a warning that it is end-of-life. `make test` runs on .venv's line; `make test-lanes`
# runs the Ansible-layer, runner, warm and compatibility tests again on each older line
# still supported, on its oldest Python, in a venv of its own (.cache/venv-<line>/).
ANSIBLE_LANES := 2.20 2.19
ANSIBLE_LANE_TESTS := tests/ansible tests/runner tests/warm/test_reuse.py \
	tests/warm/test_templates.py tests/warm/test_sameness.py tests/warm/test_shortcut.py \
	tests/warm/test_gates.py tests/warm/test_recycle.py tests/warm/test_arrivals.py tests/compat
# `make docker-build ANSIBLE_CORE=2.20`: the image's ansible-core line (default: the newest).
ANSIBLE_CORE ?=

# The embedded cluster writes its admin kubeconfig here (a contract: docs and tests use it).
CLUSTER_KUBECONFIG := $(CURDIR)/.cluster/kubeconfig
KUBECTL = $(shell $(PY) -m devcluster which kubectl)

# Targets that talk to a cluster use $KUBECONFIG (or ~/.kube/config) when one is
# configured, else the embedded cluster, started on demand.
ifeq ($(strip $(KUBECONFIG)),)
ifeq ($(wildcard $(HOME)/.kube/config),)
USE_EMBEDDED := yes
export KUBECONFIG := $(CLUSTER_KUBECONFIG)
endif
endif

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9.-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

# The warm launch client, compiled (runner/warm/client.c); without it wire.py is used.
WARM_CLIENT := runner/warm/wire-client

.PHONY: venv
venv: $(WARM_CLIENT) ## Create .venv/ on the newest ansible-core line this host's Python allows (PYTHON=...: that Python).
	@python3 hack/venv.py ensure $(VENV)

$(WARM_CLIENT): runner/warm/client.c
	$(CC) -O2 -Wall -Wextra -o $@ $<

##@ Development

# Test sets (testkit/lanes.py marks them; docs/development.md says what runs where):
#   make check      lint-python + the unit tests (no cluster, no Ansible run), ~1 min
#   make test       the gate: lint + unit and integration tests on the shared cluster, on
#                   TEST_WORKERS parallel pytest-xdist workers (--dist loadgroup keeps the
#                   tests that share cluster-scoped state on one worker)
#   make test-lanes the slow lanes: the real node and image scenarios (one at a time), the
#                   Ansible-layer, runner and warm tests on the older lines, molecule
#   make test-all   test + test-lanes: everything, what CI (.ci/run) runs
# Workers: most tests wait on the API server, Ansible or a timeout, not on a core; 3 was
# the fastest on 2 cores (docs/development.md has the figures). TEST_WORKERS=0: serial.
TEST_WORKERS ?= 3
CHECK_WORKERS ?= 2
PYTEST_PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
PYTEST_CHECK_PARALLEL = $(if $(filter 0,$(CHECK_WORKERS)),,-n $(CHECK_WORKERS) --dist loadgroup)

.PHONY: check
check: venv ## The inner loop, no cluster: the Python linters and the unit tests (~1 min; make test is the gate).
	$(MAKE) --no-print-directory lint-python
	KUBECONFIG= $(BIN)/pytest -q -m 'not integration' $(PYTEST_CHECK_PARALLEL)

.PHONY: lint-python
lint-python: venv ## ruff, mypy --strict, import contracts.
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

.PHONY: lint
lint: venv lint-python ## The Python linters, ansible-lint (roles, playbooks), hadolint (Dockerfile).
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/runner/collection $(BIN)/ansible-lint --offline --profile production roles/ playbooks/
	$(BIN)/hadolint Dockerfile

.PHONY: fmt
fmt: venv ## Format the Python code.
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

.PHONY: test
test: venv cluster-up ## The gate: lint, unit and integration tests on .venv's (the newest) ansible-core line, TEST_WORKERS in parallel (leaves the cluster up; the slow lanes: test-lanes).
	$(MAKE) --no-print-directory lint
	KUBECONFIG= PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE=$$(python3 hack/venv.py line $(VENV)) $(BIN)/pytest -m 'not lane and not exclusive' $(PYTEST_PARALLEL)
	KUBECONFIG= PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE=$$(python3 hack/venv.py line $(VENV)) $(BIN)/pytest -m 'exclusive and not lane'

.PHONY: test-lanes
test-lanes: venv cluster-up ## The slow lanes: real node and image scenarios, the Ansible lane on each older line (ANSIBLE_LANES), the embedded molecule scenario.
	KUBECONFIG= PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE=$$(python3 hack/venv.py line $(VENV)) $(BIN)/pytest -m lane
	$(foreach line,$(ANSIBLE_LANES),$(MAKE) --no-print-directory test-ansible LINE=$(line) &&) true
	$(MAKE) --no-print-directory molecule

.PHONY: test-all
test-all: ## Everything: make test, then make test-lanes and make fuzz (what CI runs: .ci/run).
	$(MAKE) --no-print-directory test
	$(MAKE) --no-print-directory test-lanes
	$(MAKE) --no-print-directory fuzz

# The property tests of every entry point that parses outside input (testkit/hostile.py
# generates it): make check and make test run 100 cases each, make fuzz FUZZ_EXAMPLES.
FUZZ_TESTS := tests/ansible/test_cr_data.py tests/webhook/test_review_properties.py \
	tests/config/watches/test_properties.py tests/kube/test_config_properties.py \
	tests/proxy/test_target_properties.py tests/reconcile/test_annotation_properties.py \
	tests/prune/test_annotation_properties.py tests/warm/test_idle_properties.py
FUZZ_EXAMPLES ?= 2000
.PHONY: fuzz
fuzz: venv ## The property tests with FUZZ_EXAMPLES generated cases each (CR data, AdmissionReview, watches.yaml, kubeconfig, proxy targets, annotations).
	KUBECONFIG= HYPOTHESIS_PROFILE=fuzz FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q $(FUZZ_TESTS)

# The Ansible lane on one line, in its own venv on the line's oldest Python (hack/venv.py
# makes .cache/venv-<line>/ on first use): `make test-ansible LINE=2.20` (or ANSIBLE_LINE=).
# Skipped, with the reason, where no Python for the line is installed.
ANSIBLE_LINE ?= $(or $(LINE),$(firstword $(ANSIBLE_LANES)))
LANE_VENV = $(CURDIR)/.cache/venv-$(ANSIBLE_LINE)
LANE_ENV = KUBECONFIG= PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE=$(ANSIBLE_LINE) PATH=$(LANE_VENV)/bin:$$PATH
.PHONY: test-ansible
test-ansible: cluster-up ## The Ansible-layer, runner and warm tests on ansible-core LINE (2.19, 2.20, 2.21), on its oldest Python.
	@if python3 hack/venv.py pick --line $(ANSIBLE_LINE) --python oldest >/dev/null; then \
		python3 hack/venv.py ensure $(LANE_VENV) --line $(ANSIBLE_LINE) --python oldest && \
		$(LANE_ENV) $(LANE_VENV)/bin/pytest -m 'not exclusive' $(PYTEST_PARALLEL) $(ANSIBLE_LANE_TESTS) && \
		$(LANE_ENV) $(LANE_VENV)/bin/pytest -m exclusive $(ANSIBLE_LANE_TESTS); \
	else echo "test-ansible LINE=$(ANSIBLE_LINE) skipped: no Python for it here"; fi

.PHONY: unit
unit: venv ## Unit tests only (no cluster, no Ansible run).
	KUBECONFIG= $(BIN)/pytest -m 'not integration' $(PYTEST_CHECK_PARALLEL)

.PHONY: bench
bench: venv cluster-up ## Cold vs warm Ansible on the embedded cluster (BENCH_ARGS=--help for smaller runs).
	$(PY) bench/reconcile.py $(BENCH_ARGS)

.PHONY: bench-memcached
bench-memcached: venv cluster-up ## Memcached at scale: N CRs of 3 pods created, then upgraded; NODE=real on the real node (BENCH_ARGS=--help).
	$(PY) bench/memcached_scale.py$(if $(filter real,$(NODE)), --node real) $(BENCH_ARGS)

.PHONY: bench-sharding
bench-sharding: venv cluster-up ## Reconciles per minute with 1 vs 3 sharded replicas, CPU per reconcile, projection (BENCH_ARGS=--help).
	$(PY) bench/sharding.py $(BENCH_ARGS)

.PHONY: chaos
chaos: venv cluster-binaries ## CRs under churn through kill -9, API server/etcd restarts, a frozen link, handover, on its own cluster; checks and figures (CHAOS_ARGS=--help).
	$(PY) -m bench.chaos $(CHAOS_ARGS)

.PHONY: bench-webhook
bench-webhook: venv cluster-up ## Admission webhook latency (assert-only and Memcached validators), alone and under load; CPU-s per admission (BENCH_ARGS=--help).
	$(PY) -m bench.webhook $(BENCH_ARGS)

.PHONY: bench-scale
bench-scale: venv cluster-up ## Soak: 2000 Memcacheds on kwok, 30 min of spec churn, 25k noise objects; RSS, threads, fds, runner dir, runs/min over time (BENCH_ARGS=--help; quick: --crs 50 --duration 120 --noise off).
	$(PY) -m bench.scale_soak $(BENCH_ARGS)

.PHONY: bench-restart-storm
bench-restart-storm: venv cluster-up ## A runner restarted with N settled Memcached CRs, --startup-resync-window 0 vs a window: CPU, time until quiet, a new and a changed CR's latency (BENCH_ARGS=--help).
	$(PY) -m bench.restart_storm $(BENCH_ARGS)

.PHONY: bench-cache-budget
bench-cache-budget: venv cluster-up ## Runner memory with and without 25k unowned ConfigMaps and Secrets (BENCH_ARGS="--old DIR" compares with other code).
	$(PY) -m bench.cache_budget $(BENCH_ARGS)

.PHONY: bench-initial-list
bench-initial-list: venv cluster-up ## Runner memory while an informer reads 20k objects: streamed (WatchList), LIST pages, one whole LIST (BENCH_ARGS=--help).
	$(PY) -m bench.initial_list $(BENCH_ARGS)

.PHONY: bench-compare
# --write-doc: the run rewrites docs/performance.md's side-by-side table (between its
# bench-compare markers); any other BENCH_ARGS leaves the doc alone unless it has it too.
bench-compare: BENCH_ARGS ?= --write-doc
bench-compare: venv cluster-up ## Side by side with operator-sdk's Go ansible-operator v1.31 (builds it into bin/), writes docs/performance.md's table (BENCH_ARGS=--help).
	hack/ansible-operator/build.sh
	$(PY) bench/compare.py $(BENCH_ARGS)

# make run's admission webhooks (watches.yaml validation:/mutation:): devhooks
# (runner/tools/scaffold/devhooks.py) makes a serving certificate for 127.0.0.1 here and
# registers webhook configurations calling https://127.0.0.1:$(WEBHOOK_PORT) (only on an
# API server on this machine), and removes them when the runner exits. Nothing happens
# while no watch has a webhook.
WEBHOOK_CERT_DIR := $(CURDIR)/.cluster/webhook-certs
WEBHOOK_PORT ?= 9443
WEBHOOK_DEV = KUBECTL=$(KUBECTL) $(PY) -m runner.tools.scaffold.devhooks

.PHONY: run
run: venv $(if $(USE_EMBEDDED),cluster-up) install ## Run the operator in the foreground (embedded cluster if none is configured); role edits go live (--dev).
	@echo "KUBECONFIG=$$KUBECONFIG — try: $(KUBECTL) apply -f config/samples/cache_v1alpha1_memcached.yaml"
	$(WEBHOOK_DEV) up --watches-file=./watches.yaml --cert-dir=$(WEBHOOK_CERT_DIR) --port=$(WEBHOOK_PORT) \
		$(if $(USE_EMBEDDED),--client-ca=$(CURDIR)/.cluster/pki/webhook-client-ca.crt)
	trap '$(WEBHOOK_DEV) down --cert-dir=$(WEBHOOK_CERT_DIR)' EXIT; trap 'exit 130' INT TERM; \
	ANSIBLE_ROLES_PATH=$(CURDIR)/roles $(BIN)/playbook-operator run --watches-file=./watches.yaml \
		--health-probe-bind-address=127.0.0.1:6789 --metrics-bind-address=127.0.0.1:8080 --zap-devel \
		--webhook-host=127.0.0.1 --webhook-port=$(WEBHOOK_PORT) --webhook-cert-dir=$(WEBHOOK_CERT_DIR) --dev

##@ Deployment

.PHONY: install
install: venv $(if $(USE_EMBEDDED),cluster-up) ## Install the CRDs into the cluster.
	$(KUBECTL) apply -k config/crd

.PHONY: uninstall
uninstall: venv ## Remove the CRDs from the cluster.
	$(KUBECTL) delete -k config/crd --ignore-not-found

# NODE=real: deploy config/devcluster-real instead (the manager on the embedded cluster's
# real node, `make cluster-up NODE=real`), after loading the podman image IMG into it.
DEPLOY_CONFIG ?= $(if $(filter real,$(NODE)),config/devcluster-real,config/default)

.PHONY: deploy
deploy: venv $(if $(USE_EMBEDDED),cluster-up) ## Deploy the operator with kustomize (config/default), image IMG (NODE=real: on the embedded cluster's real node).
	$(if $(filter real,$(NODE)),$(PY) -m devcluster load $(IMG))
	$(KUBECTL) kustomize $(DEPLOY_CONFIG) | sed "s|image: controller:latest|image: $(IMG)|" | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: venv ## Remove everything deploy created.
	$(KUBECTL) delete -k config/default --ignore-not-found

.PHONY: docker-build
docker-build: ## Build the operator image IMG with CONTAINER_TOOL (docker or podman; ANSIBLE_CORE=2.19, 2.20 or 2.21).
	$(CONTAINER_TOOL) build $(if $(ANSIBLE_CORE),--build-arg ANSIBLE_CORE=$(ANSIBLE_CORE) )$(if $(PYTHON_IMAGE),--build-arg PYTHON_IMAGE=$(PYTHON_IMAGE) )$(if $(CONTAINER_BUILD_FLAGS),$(CONTAINER_BUILD_FLAGS) )-t $(IMG) .

.PHONY: docker-build-local
docker-build-local: ## Build IMG with podman and no registry: a base made from Debian packages (debootstrap, root), then the Dockerfile.
	CONTAINERS_CONF=$(PODMAN_CONF) ANSIBLE_CORE=$(ANSIBLE_CORE) hack/image/build-local.sh $(IMG)

.PHONY: docker-push
docker-push: ## Push the operator image IMG.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: molecule
molecule: venv cluster-binaries ## Molecule on the embedded cluster (MOLECULE_SCENARIO=default: a deployed image in the KUBECONFIG cluster).
	@scenario=$${MOLECULE_SCENARIO:-embedded}; \
	if [ "$$scenario" = embedded ]; then \
		$(MAKE) --no-print-directory cluster-up && export KUBECONFIG=$(CLUSTER_KUBECONFIG); \
	fi; \
	KUBECTL=$(KUBECTL) KUSTOMIZE_PATH=$(KUBECTL) KWOK=$$($(PY) -m devcluster which kwok) \
		ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/runner/collection $(BIN)/molecule test -s $$scenario

##@ Bundle

# Publishing on OperatorHub (docs/publishing.md), with operator-sdk's Ansible scaffold's
# variables and targets. The Go tools are built from the Go module proxy into bin/ on
# first use, at the versions runner/tools/publish/gotools.py pins; after that, all of
# it works offline. VERSION, IMG and CONTAINER_TOOL (podman works) are set above.
#
# CHANNELS ("candidate,fast,stable") and DEFAULT_CHANNEL ("stable") go into the bundle's
# metadata when given: make bundle CHANNELS=candidate,fast,stable DEFAULT_CHANNEL=stable.
ifneq ($(origin CHANNELS), undefined)
BUNDLE_CHANNELS := --channels=$(CHANNELS)
endif
ifneq ($(origin DEFAULT_CHANNEL), undefined)
BUNDLE_DEFAULT_CHANNEL := --default-channel=$(DEFAULT_CHANNEL)
endif
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)
# The registry and name every image of the operator starts with (bundle, catalog).
IMAGE_TAG_BASE ?= example.com/memcached-operator
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# USE_IMAGE_DIGESTS=true: images referenced by digest (needs the registry).
USE_IMAGE_DIGESTS ?= false
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)
ifeq ($(USE_IMAGE_DIGESTS), true)
BUNDLE_GEN_FLAGS += --use-image-digests
endif
# The package and channel of the file-based catalog (make catalog).
PACKAGE_NAME ?= memcached-operator
CATALOG_CHANNEL ?= $(or $(DEFAULT_CHANNEL),alpha)
CATALOG_DIR ?= catalog

LOCALBIN ?= $(CURDIR)/bin
GO_TOOL = $(PY) -m runner.tools.publish.gotools --bin-dir $(LOCALBIN)
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk
OPM ?= $(LOCALBIN)/opm
KUSTOMIZE ?= $(LOCALBIN)/kustomize
SCORECARD_TEST ?= $(LOCALBIN)/scorecard-test

.PHONY: operator-sdk opm kustomize scorecard-test
operator-sdk opm kustomize scorecard-test: venv ## Build a pinned Go tool into bin/ (first use only).
	@$(GO_TOOL) $@ >/dev/null

.PHONY: manifests
manifests: venv ## Write each watched kind's CRD schema from its role's meta/argument_specs.yml (config/crd/bases).
	$(BIN)/playbook-operator generate crd

.PHONY: bundle
bundle: manifests operator-sdk kustomize ## Write bundle/ (the base CSV, then operator-sdk generate bundle) and validate it.
	$(BIN)/playbook-operator generate csv --version $(VERSION)
	$(KUSTOMIZE) build config/manifests | sed -E "s#([iI]mage): controller:latest#\1: $(IMG)#" \
		| $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)
	$(OPERATOR_SDK) bundle validate ./bundle
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework

.PHONY: scorecard
scorecard: bundle scorecard-test ## Run the bundle's six scorecard tests (the scorecard-test binary, no cluster).
	$(BIN)/playbook-operator scorecard --bundle bundle --scorecard-test $(SCORECARD_TEST)

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
	$(MAKE) --no-print-directory docker-push IMG=$(BUNDLE_IMG)

.PHONY: catalog
catalog: bundle opm ## Write a file-based catalog of the bundle (catalog/, catalog.Dockerfile) and opm validate it.
	rm -rf $(CATALOG_DIR) $(CATALOG_DIR).Dockerfile && mkdir -p $(CATALOG_DIR)/$(PACKAGE_NAME)
	$(OPM) init $(PACKAGE_NAME) --default-channel=$(CATALOG_CHANNEL) --output=yaml \
		> $(CATALOG_DIR)/$(PACKAGE_NAME)/index.yaml
	$(OPM) render ./bundle --output=yaml \
		| sed "s|^image: .*|image: $(BUNDLE_IMG)|" >> $(CATALOG_DIR)/$(PACKAGE_NAME)/index.yaml
	printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n  - name: %s.v%s\n' \
		$(PACKAGE_NAME) $(CATALOG_CHANNEL) $(PACKAGE_NAME) $(VERSION) >> $(CATALOG_DIR)/$(PACKAGE_NAME)/index.yaml
	$(OPM) validate $(CATALOG_DIR)
	$(OPM) generate dockerfile $(CATALOG_DIR)

.PHONY: catalog-build
catalog-build: ## Build the catalog image CATALOG_IMG (after make catalog).
	$(CONTAINER_TOOL) build -f $(CATALOG_DIR).Dockerfile -t $(CATALOG_IMG) .

.PHONY: catalog-push
catalog-push: ## Push the catalog image CATALOG_IMG.
	$(MAKE) --no-print-directory docker-push IMG=$(CATALOG_IMG)

##@ Embedded cluster

# NODE=real: cluster-binaries and cluster-up also build and add a real node (containerd,
# kubelet, kube-proxy; root), tainted so only pods that ask for it land there.
NODE ?=
NODE_FLAG = $(if $(filter real,$(NODE)), --node real)

.PHONY: cluster-binaries
cluster-binaries: venv ## Build etcd, kube-apiserver, controller-manager, scheduler, kubectl, kwok (first time only; NODE=real: kubelet, kube-proxy too).
	$(PY) -m devcluster build$(NODE_FLAG)

.PHONY: cluster-up
cluster-up: cluster-binaries ## Start the embedded control plane; kubeconfig in .cluster/kubeconfig (NODE=real: add a real node; KWOK=off: it takes every pod).
	$(PY) -m devcluster up$(NODE_FLAG)$(if $(filter off,$(KWOK)), --kwok off)

.PHONY: cluster-load
cluster-load: venv ## Load the local podman image IMG into the real node's containerd (like kind load docker-image).
	$(PY) -m devcluster load $(IMG)

.PHONY: cluster-down
cluster-down: venv ## Stop every process of the embedded control plane (and the real node, if any).
	$(PY) -m devcluster down

.PHONY: cluster-status
cluster-status: venv ## Show the embedded control plane's processes and health.
	$(PY) -m devcluster status
