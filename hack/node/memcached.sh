#!/usr/bin/env bash
# A stand-in for the memcached role's image, for the embedded cluster's real node on
# hosts that reach no container registry: Debian's memcached on the local Debian base
# (hack/image/base.sh), tagged with the exact name and tag the role uses
# (roles/memcached/defaults/main.yml: image and version), so pods of the role's
# Deployment find it in the node's containerd without a pull.
#
#   hack/node/memcached.sh          # prints the image's names, builds it if needed
#
# The image also gets the tags other memcached samples use (ALIASES); the last line of
# output holds every name, the built one first (devcluster loads that one and gives the
# node's copy the others). It reports its own Debian version whatever the tag says.
#
# The image carries a digest of its recipe (these files and the base image's id): a
# later call with the same recipe finds it in podman's storage and builds nothing.
# Needs podman (and root with debootstrap, the first time, for the base).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${ROOT}/hack/image/containers.conf}"
DEFAULTS="${ROOT}/roles/memcached/defaults/main.yml"
LABEL=io.playbook-operator.stand-in-recipe

repository="$(awk '$1 == "image:" {print $2; exit}' "${DEFAULTS}")"
tag="$(awk '$1 == "version:" {print $2; exit}' "${DEFAULTS}")"
if [[ -z "${repository}" || -z "${tag}" ]]; then
    echo "memcached.sh: no image/version in ${DEFAULTS}" >&2
    exit 1
fi
IMAGE="${repository}:${tag}"
# 1.6.39-alpine: this project's upgrade test; 1.4.36-alpine: operator-sdk's Ansible
# memcached tutorial; 1.6.26-alpine3.19: its Go tutorial; the rest: common moving tags.
ALIASES=(1.6.39-alpine 1.4.36-alpine 1.6.26-alpine3.19 1.6-alpine alpine latest)

base="$("${ROOT}/hack/image/base.sh")"
base_id="$(podman image inspect --format '{{.Id}}' "${base}")"
recipe="$(
    cat "${BASH_SOURCE[0]}" "${ROOT}/hack/node/memcached/Containerfile" \
        "${ROOT}/hack/node/memcached/docker-entrypoint.sh" <(echo "${base_id}") |
        sha256sum | cut -c1-16
)"
if [[ "$(podman image inspect --format "{{ index .Labels \"${LABEL}\" }}" "${IMAGE}" 2>/dev/null)" != "${recipe}" ]]; then
    echo "memcached.sh: building ${IMAGE} from Debian's memcached on ${base}" >&2
    podman build --quiet --network=host --build-arg "BASE=${base}" --label "${LABEL}=${recipe}" \
        -t "${IMAGE}" "${ROOT}/hack/node/memcached" >&2
fi
names=("${IMAGE}")
for alias in "${ALIASES[@]}"; do
    if [[ "${alias}" != "${tag}" ]]; then
        podman tag "${IMAGE}" "${repository}:${alias}" >&2
        names+=("${repository}:${alias}")
    fi
done
echo "${names[*]}"
