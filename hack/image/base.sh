#!/usr/bin/env bash
# A local stand-in for the Dockerfile's default base image (python:3.13-slim-trixie),
# made from Debian packages, for hosts that reach no container registry.
#
#   hack/image/base.sh              # prints the image reference, builds it if needed
#   BASE_SUITE=bookworm hack/image/base.sh   # Debian 12's Python 3.11 (ansible-core 2.19)
#
# Debian trixie's own python3 is 3.13, the Dockerfile's Python minor (bookworm's is 3.11,
# for an image on ansible-core 2.19, the last line that runs on it). The stand-in gives
# the Dockerfile what it expects of a python slim image: `python3` and `python`, `pip`
# that may install into the system Python (the EXTERNALLY-MANAGED marker is removed, as
# python images have none), apt working (Debian's sources, for tini), a UTF-8 locale.
# It also trusts the CA certificates this host adds to its own store
# (/usr/local/share/ca-certificates), so that pip inside the build reaches PyPI the way
# this host does. It is a build aid only: release builds use the real base image.
#
# The rootfs comes from debootstrap (root needed) and is imported into podman as
# $BASE_IMAGE, labelled with a digest of this recipe: a later call with the same recipe
# finds the image in podman's storage and builds nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${ROOT}/hack/image/containers.conf}"
SUITE="${BASE_SUITE:-trixie}"
case "${SUITE}" in
trixie) python=3.13 ;;
bookworm) python=3.11 ;;
*)
    echo "base.sh: BASE_SUITE=${SUITE}: trixie or bookworm" >&2
    exit 1
    ;;
esac
IMAGE="${BASE_IMAGE:-localhost/playbook-operator-base:${SUITE}-python${python}}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES=python3,python3-pip,python-is-python3,ca-certificates
# debootstrap checks the suite's Release signature against Debian's archive keyring and
# refuses to go on without it (--force-check-gpg): the mirror is plain http.
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
LABEL=io.playbook-operator.base-recipe

local_cas=()
if [[ -d /usr/local/share/ca-certificates ]]; then
    mapfile -t local_cas < <(find /usr/local/share/ca-certificates -name '*.crt' -type f | sort)
fi
recipe="$(
    {
        cat "${BASH_SOURCE[0]}"
        echo "${MIRROR} ${SUITE} ${PACKAGES}"
        if ((${#local_cas[@]})); then cat "${local_cas[@]}"; fi
    } | sha256sum | cut -c1-16
)"

if [[ "$(podman image inspect --format "{{ index .Labels \"${LABEL}\" }}" "${IMAGE}" 2>/dev/null)" == "${recipe}" ]]; then
    echo "${IMAGE}"
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "base.sh: debootstrap needs root to build ${IMAGE}" >&2
    exit 1
fi

if [[ ! -s "${KEYRING}" ]]; then
    echo "base.sh: installing debian-archive-keyring (debootstrap checks signatures with it)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        debian-archive-keyring >&2 || true
fi
if [[ ! -s "${KEYRING}" ]]; then
    echo "base.sh: no ${KEYRING} to check ${SUITE}'s signature: apt-get install debian-archive-keyring" >&2
    exit 1
fi

echo "base.sh: building ${IMAGE} from ${MIRROR} ${SUITE} (debootstrap)" >&2
work="$(mktemp -d)"
# --one-file-system: a debootstrap that failed half-way may leave /proc or /sys mounted.
trap 'rm -rf --one-file-system "${work}"' EXIT
rootfs="${work}/rootfs"
debootstrap --variant=minbase --force-check-gpg --keyring="${KEYRING}" --include="${PACKAGES}" \
    "${SUITE}" "${rootfs}" "${MIRROR}" \
    >"${work}/debootstrap.log" 2>&1 || {
    tail -n 30 "${work}/debootstrap.log" >&2
    exit 1
}

# What a slim image leaves out; later apt installs (the Dockerfile's tini) skip it too.
cat >"${rootfs}/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/info/*
CFG
# As in Debian's container images: apt keeps no package caches or translations, so that
# `apt-get update && apt-get install ... && rm -rf /var/lib/apt/lists/*` leaves only the
# package behind.
cat >"${rootfs}/etc/apt/apt.conf.d/docker-slim" <<'CFG'
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
CFG
find "${rootfs}/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
rm -rf "${rootfs}"/usr/share/{man,locale,info}/* "${rootfs}"/var/cache/apt/archives/*.deb \
    "${rootfs}"/var/cache/apt/*.bin \
    "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/log/*.log
rm -f "${rootfs}"/usr/lib/python3.*/EXTERNALLY-MANAGED
if ((${#local_cas[@]})); then
    cp "${local_cas[@]}" "${rootfs}/usr/local/share/ca-certificates/"
    chroot "${rootfs}" update-ca-certificates >/dev/null 2>&1
fi

tar --numeric-owner -C "${rootfs}" -c . |
    podman import --quiet \
        --change "LABEL ${LABEL}=${recipe}" \
        --change "ENV LANG=C.UTF-8" \
        --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change 'CMD ["python3"]' \
        - "${IMAGE}" >/dev/null
echo "${IMAGE}"
