#!/usr/bin/env bash
# A Debian 13 (trixie) root with Python 3.13, for the ansible-core lines that need
# Python >= 3.12 (2.20, 2.21) on hosts whose own Python is Debian 12's 3.11.
#
#   hack/trixie/root.sh [LINE]        # make or refresh the root and the venv of LINE (2.21)
#   hack/trixie/root.sh --unavailable # print why it cannot be made here (exit 0), or exit 1
#
# Installing Python 3.13 from trixie on a bookworm host would pull trixie's libc (a partial
# upgrade), so the newer Python lives in a root of its own, made the way
# hack/image/base.sh makes the image's stand-in base: debootstrap from Debian's mirror
# (root needed), trusting the CA certificates this host adds to its store so that pip
# reaches PyPI as the host does. It is cached under .cache/trixie/ (git-ignored):
#
#   .cache/trixie/root/                          the root, remade when this recipe changes
#   .cache/trixie/root/opt/venv-ansible-<LINE>/  the project, editable from the checkout
#                                                (bind-mounted at its own path by enter.sh),
#                                                pinned by hack/constraints/ansible-<LINE>.txt
#
# Each is labelled with a digest of what made it (RECIPE's revision, the mirror, suite,
# packages and CAs; then pyproject.toml and the constraints file), so a later call with
# nothing changed does nothing. Bump RECIPE when a change below should remake the root.
# hack/trixie/enter.sh runs commands inside; hack/trixie/test.sh runs the Ansible lane of a
# line there (make test-ansible LINE=2.20, make test-ansible-2.21).
set -euo pipefail

CHECKOUT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${TRIXIE_CACHE:-${CHECKOUT}/.cache/trixie}"
ROOTFS="${CACHE}/root"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=trixie
# python3-venv brings ensurepip; gcc is not needed: the warm client (runner/warm/wire-client)
# is built on the host and, linked against an older glibc, runs on trixie's.
PACKAGES=python3,python3-venv,ca-certificates
# debootstrap checks the suite's Release signature against Debian's archive keyring and
# refuses to go on without it (--force-check-gpg): the mirror is plain http.
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# 2: debootstrap checks signatures; a root made before is remade.
RECIPE=2

unavailable() {
    if [[ "$(id -u)" != 0 ]]; then
        echo "debootstrap and chroot need root (running as uid $(id -u))"
    elif ! command -v debootstrap >/dev/null; then
        echo "debootstrap is not installed (apt-get install debootstrap)"
    elif ! command -v unshare >/dev/null; then
        echo "unshare is not installed (apt-get install util-linux)"
    elif [[ ! -s "${KEYRING}" ]] && ! command -v apt-get >/dev/null; then
        echo "debian-archive-keyring is not installed (${KEYRING}: debootstrap checks signatures)"
    else
        return 1
    fi
}

if [[ "${1:-}" == --unavailable ]]; then
    unavailable
    exit
fi
LINE="${1:-2.21}"
CONSTRAINTS="${CHECKOUT}/hack/constraints/ansible-${LINE}.txt"
if [[ ! -f "${CONSTRAINTS}" ]]; then
    echo "root.sh: no ${CONSTRAINTS#"${CHECKOUT}"/}: not a supported ansible-core line" >&2
    exit 1
fi
if reason="$(unavailable)"; then
    echo "root.sh: ${reason}" >&2
    exit 1
fi

local_cas=()
if [[ -d /usr/local/share/ca-certificates ]]; then
    mapfile -t local_cas < <(find /usr/local/share/ca-certificates -name '*.crt' -type f | sort)
fi
recipe="$(
    {
        echo "${RECIPE} ${MIRROR} ${SUITE} ${PACKAGES}"
        if ((${#local_cas[@]})); then cat "${local_cas[@]}"; fi
    } | sha256sum | cut -c1-16
)"

if [[ "$(cat "${ROOTFS}/.recipe" 2>/dev/null)" != "${recipe}" ]]; then
    echo "root.sh: making ${ROOTFS#"${CHECKOUT}"/} from ${MIRROR} ${SUITE} (debootstrap)" >&2
    start=${SECONDS}
    if [[ ! -s "${KEYRING}" ]]; then
        echo "root.sh: installing debian-archive-keyring (debootstrap checks signatures with it)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            debian-archive-keyring >&2 || true
    fi
    if [[ ! -s "${KEYRING}" ]]; then
        echo "root.sh: no ${KEYRING} to check ${SUITE}'s signature: apt-get install debian-archive-keyring" >&2
        exit 1
    fi
    mkdir -p "${CACHE}"
    work="$(mktemp -d "${CACHE}/make.XXXXXX")"
    # --one-file-system: a debootstrap that failed half-way may leave /proc or /sys mounted.
    trap 'rm -rf --one-file-system "${work}"' EXIT
    debootstrap --variant=minbase --force-check-gpg --keyring="${KEYRING}" \
        --include="${PACKAGES}" "${SUITE}" "${work}/root" "${MIRROR}" \
        >"${work}/debootstrap.log" 2>&1 || {
        tail -n 30 "${work}/debootstrap.log" >&2
        exit 1
    }
    if ((${#local_cas[@]})); then
        cp "${local_cas[@]}" "${work}/root/usr/local/share/ca-certificates/"
        chroot "${work}/root" update-ca-certificates >/dev/null 2>&1
    fi
    rm -rf "${work}"/root/var/cache/apt/archives/*.deb "${work}"/root/var/lib/apt/lists/*
    # enter.sh bind-mounts the host's resolv.conf on it.
    rm -f "${work}/root/etc/resolv.conf"
    touch "${work}/root/etc/resolv.conf"
    echo "${recipe}" >"${work}/root/.recipe"
    if [[ -d "${ROOTFS}" ]]; then
        rm -rf --one-file-system "${ROOTFS}"
    fi
    mv "${work}/root" "${ROOTFS}"
    echo "root.sh: root made in $((SECONDS - start)) s" >&2
fi

venv="/opt/venv-ansible-${LINE}"
stamp="$({ echo "${recipe}"; cat "${CHECKOUT}/pyproject.toml" "${CONSTRAINTS}"; } | sha256sum | cut -c1-16)"
if [[ "$(cat "${ROOTFS}${venv}/.installed" 2>/dev/null)" != "${stamp}" ]]; then
    echo "root.sh: installing the project with ansible-core ${LINE} into ${venv} (pip)" >&2
    start=${SECONDS}
    rm -rf "${ROOTFS:?}${venv}"
    # shellcheck disable=SC2016 # expanded inside the root
    "${CHECKOUT}/hack/trixie/enter.sh" --venv none -- sh -ec '
        python3 -m venv "$1"
        "$1/bin/pip" install --quiet --upgrade pip
        "$1/bin/pip" install --quiet -c "$2" -e "$3[dev]"
    ' sh "${venv}" "${CONSTRAINTS}" "${CHECKOUT}"
    echo "${stamp}" >"${ROOTFS}${venv}/.installed"
    echo "root.sh: installed in $((SECONDS - start)) s" >&2
fi
echo "${ROOTFS}"
