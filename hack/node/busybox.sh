#!/usr/bin/env bash
# A stand-in for docker.io/library/busybox, for the embedded cluster's real node on hosts
# that reach no container registry: Debian's busybox-static in an empty image
# (hack/node/busybox/Containerfile), built on the local Debian base (hack/image/base.sh).
# Operator tests and docs name busybox under several tags; the image gets each of them.
#
#   hack/node/busybox.sh            # prints the image's names, builds it if needed
#
# The last line of output holds the names, the first of which is the one podman built;
# devcluster loads that one and gives the node's copy the others. The image carries a
# digest of its recipe (these files and the base image's id): a later call with the same
# recipe finds it in podman's storage and builds nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${ROOT}/hack/image/containers.conf}"
LABEL=io.playbook-operator.stand-in-recipe
REPOSITORY=docker.io/library/busybox
IMAGE="${REPOSITORY}:latest"
# 1.28: Kubernetes' own examples; 1.36/1.37: recent releases; stable, musl and glibc:
# the official image's variant tags (one static busybox serves them all here).
ALIASES=(1.28 1.35 1.36 1.37 stable musl glibc uclibc)

base="$("${ROOT}/hack/image/base.sh")"
base_id="$(podman image inspect --format '{{.Id}}' "${base}")"
recipe="$(
    cat "${BASH_SOURCE[0]}" "${ROOT}/hack/node/busybox/Containerfile" <(echo "${base_id}") |
        sha256sum | cut -c1-16
)"
if [[ "$(podman image inspect --format "{{ index .Labels \"${LABEL}\" }}" "${IMAGE}" 2>/dev/null)" != "${recipe}" ]]; then
    echo "busybox.sh: building ${IMAGE} from Debian's busybox-static on ${base}" >&2
    podman build --quiet --network=host --build-arg "BASE=${base}" --label "${LABEL}=${recipe}" \
        -t "${IMAGE}" "${ROOT}/hack/node/busybox" >&2
fi
names=("${IMAGE}")
for alias in "${ALIASES[@]}"; do
    podman tag "${IMAGE}" "${REPOSITORY}:${alias}" >&2
    names+=("${REPOSITORY}:${alias}")
done
echo "${names[*]}"
