#!/usr/bin/env bash
# A stand-in for the memcached role's image, for the embedded cluster's real node on
# hosts that reach no container registry: Debian's memcached on the local Debian base
# (hack/image/base.sh), tagged with the exact name and tag the role uses
# (roles/memcached/defaults/main.yml: image and version), so pods of the role's
# Deployment find it in the node's containerd without a pull.
#
#   hack/node/memcached.sh          # prints the image name, builds it if needed
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

base="$("${ROOT}/hack/image/base.sh")"
base_id="$(podman image inspect --format '{{.Id}}' "${base}")"
recipe="$(
    cat "${BASH_SOURCE[0]}" "${ROOT}/hack/node/memcached/Containerfile" \
        "${ROOT}/hack/node/memcached/docker-entrypoint.sh" <(echo "${base_id}") |
        sha256sum | cut -c1-16
)"
if [[ "$(podman image inspect --format "{{ index .Labels \"${LABEL}\" }}" "${IMAGE}" 2>/dev/null)" == "${recipe}" ]]; then
    echo "${IMAGE}"
    exit 0
fi

echo "memcached.sh: building ${IMAGE} from Debian's memcached on ${base}" >&2
podman build --quiet --network=host --build-arg "BASE=${base}" --label "${LABEL}=${recipe}" \
    -t "${IMAGE}" "${ROOT}/hack/node/memcached" >&2
echo "${IMAGE}"
