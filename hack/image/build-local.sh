#!/usr/bin/env bash
# make docker-build-local: the operator image built with podman and no container
# registry. The base is the local stand-in from base.sh (Debian trixie's Python 3.13, from
# Debian packages; BASE_SUITE=bookworm: Python 3.11); the project's Dockerfile is built
# unchanged on top of it, with pip reaching PyPI and apt reaching Debian's mirror through
# the host's network.
#
#   hack/image/build-local.sh [IMAGE]     # default localhost/memcached-operator:local
#
# Galaxy is not among the registries such hosts reach, so requirements.yml's collections
# are not installed (INSTALL_GALAXY_COLLECTIONS=false): the `ansible` package the runner
# depends on already bundles kubernetes.core. ANSIBLE_CORE=2.19 or 2.20 picks an older line.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${ROOT}/hack/image/containers.conf}"
IMAGE="${1:-localhost/memcached-operator:local}"

base="$("${ROOT}/hack/image/base.sh")"
args=(--build-arg "PYTHON_IMAGE=${base}" --build-arg INSTALL_GALAXY_COLLECTIONS=false)
if [[ -n "${ANSIBLE_CORE:-}" ]]; then
    args+=(--build-arg "ANSIBLE_CORE=${ANSIBLE_CORE}")
fi
# Only loopback may exist besides the host's own route out: RUN steps share the host's
# network rather than a bridge podman would have to set up.
podman build --network=host "${args[@]}" -t "${IMAGE}" "${ROOT}"
