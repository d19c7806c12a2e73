#!/usr/bin/env bash
# Run a command inside the trixie root of hack/trixie/root.sh, as if on this host: same
# network (the embedded cluster on 127.0.0.1 answers), the checkout bind-mounted at its own
# path (kubeconfig, control-plane binaries, roles, editable install), the working directory
# kept, and the root's venv of one ansible-core line first on PATH.
#
#   hack/trixie/enter.sh [--line 2.21 | --venv none] -- COMMAND [ARG...]
#
# The mounts live in a private mount namespace (unshare --mount): they go away with the
# command, nothing is left mounted on the host. Only the network namespace is shared;
# processes are seen as on the host (/proc is mounted for the same PID namespace), which the
# tests' cluster fixture relies on to find `make cluster-up`'s processes alive.
set -euo pipefail

CHECKOUT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROOTFS="${TRIXIE_CACHE:-${CHECKOUT}/.cache/trixie}/root"
LINE=2.21
VENV=yes
while (($#)); do
    case "$1" in
    --line) LINE="$2"; shift 2 ;;
    --venv) VENV="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
    esac
done
if (($# == 0)); then
    set -- bash
fi
if [[ ! -f "${ROOTFS}/.recipe" ]]; then
    echo "enter.sh: no root at ${ROOTFS} (hack/trixie/root.sh makes it)" >&2
    exit 1
fi
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if [[ "${VENV}" != none ]]; then
    path="/opt/venv-ansible-${LINE}/bin:${path}"
fi

# The environment inside is built, not inherited: the host's PATH names its own venvs.
# What is passed through: the settings a lane or a developer gives a test run or the operator.
env_args=(HOME=/root LANG=C.UTF-8 PATH="${path}" TERM="${TERM:-dumb}"
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1)
for name in $(compgen -e); do
    case "${name}" in
    KUBECONFIG | PIP_DEFAULT_TIMEOUT | PIP_INDEX_URL | PYTEST_ADDOPTS | ANSIBLE_* | \
        PLAYBOOK_OPERATOR_* | K8S_AUTH_* | HTTP_PROXY | HTTPS_PROXY | NO_PROXY | \
        http_proxy | https_proxy | no_proxy)
        env_args+=("${name}=${!name}")
        ;;
    esac
done

# shellcheck disable=SC2016 # expanded by the shell in the new mount namespace
exec unshare --mount --propagation private -- bash -ec '
    rootfs=$1 checkout=$2 cwd=$3 nenv=$4; shift 4
    mount --rbind /dev "${rootfs}/dev"
    mount -t proc proc "${rootfs}/proc"
    mount --rbind /sys "${rootfs}/sys"
    mount --bind /etc/resolv.conf "${rootfs}/etc/resolv.conf"
    mkdir -p "${rootfs}${checkout}"
    mount --bind "${checkout}" "${rootfs}${checkout}"
    case "${cwd}" in "${checkout}" | "${checkout}"/*) ;; *) cwd=${checkout} ;; esac
    exec chroot "${rootfs}" /usr/bin/env -i "${@:1:nenv}" \
        /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "${cwd}" "${@:nenv+1}"
' bash "${ROOTFS}" "${CHECKOUT}" "${PWD}" "${#env_args[@]}" "${env_args[@]}" "$@"
