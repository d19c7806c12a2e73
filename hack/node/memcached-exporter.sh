#!/usr/bin/env bash
# A stand-in for the memcached role's exporter sidecar image, for the embedded
# cluster's real node on hosts that reach no container registry:
# `go mod download github.com/prometheus/memcached_exporter@latest` answers
# "403 Forbidden ... This module version is not available" here and Debian packages no
# memcached exporter, so hack/node/memcached-exporter/ holds a small exporter of our own
# (Go standard library only) serving the real exporter's metric names on :9150. It is
# tagged with the exact name the role uses (roles/memcached/defaults/main.yml:
# memcached_monitoring_defaults.image), so the sidecar finds it without a pull.
#
#   hack/node/memcached-exporter.sh   # prints the image name, builds it if needed
#
# The image carries a digest of its recipe (these files and go's version): a later call
# with the same recipe finds it in podman's storage and builds nothing. Needs go, podman.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${ROOT}/hack/image/containers.conf}"
DEFAULTS="${ROOT}/roles/memcached/defaults/main.yml"
SOURCE="${ROOT}/hack/node/memcached-exporter"
LABEL=io.playbook-operator.stand-in-recipe

IMAGE="$(awk '$1 == "image:" && $2 ~ /memcached-exporter:/ {print $2; exit}' "${DEFAULTS}")"
if [[ -z "${IMAGE}" ]]; then
    echo "memcached-exporter.sh: no memcached-exporter image in ${DEFAULTS}" >&2
    exit 1
fi
GO="$(command -v go || echo /usr/local/go/bin/go)"
if [[ ! -x "${GO}" ]]; then
    echo "memcached-exporter.sh: go is not installed (needed to build ${IMAGE})" >&2
    exit 1
fi

recipe="$(
    cat "${BASH_SOURCE[0]}" "${SOURCE}/Containerfile" "${SOURCE}/go.mod" "${SOURCE}/main.go" \
        <("${GO}" version) | sha256sum | cut -c1-16
)"
if [[ "$(podman image inspect --format "{{ index .Labels \"${LABEL}\" }}" "${IMAGE}" 2>/dev/null)" == "${recipe}" ]]; then
    echo "${IMAGE}"
    exit 0
fi

echo "memcached-exporter.sh: building ${IMAGE} from ${SOURCE}" >&2
context="$(mktemp -d)"
trap 'rm -rf "${context}"' EXIT
CGO_ENABLED=0 GOFLAGS=-mod=mod "${GO}" build -C "${SOURCE}" -trimpath -ldflags=-s \
    -o "${context}/memcached_exporter" .
cp "${SOURCE}/Containerfile" "${context}/"
podman build --quiet --label "${LABEL}=${recipe}" -t "${IMAGE}" "${context}" >&2
echo "${IMAGE}"
