#!/usr/bin/env bash
# Build operator-sdk's Go ansible-operator (v1.31) into bin/, and a venv with the
# Python side it drives, for the side-by-side benchmark (make bench-compare).
#
#   hack/ansible-operator/build.sh            # bin/ansible-operator-v1.31.0, .venv-ansible-operator/
#
# - The Go runtime is operator-sdk's cmd/ansible-operator at v1.31.0, from the Go
#   module proxy. `go install` refuses the module's replace lines, so a writable
#   copy of the module is built with `go build` (about 2 min on 2 cores).
# - Its Python side: ansible-runner 2.3.x (2.4 writes event timestamps the Go
#   receiver cannot parse, so no CR would ever succeed) and ansible-runner-http
#   1.0.0, plus the same ansible-core, ansible, kubernetes (and so kubernetes.core)
#   as .venv, so both runtimes run the same Ansible.
# Both are skipped when already there. Nothing here is committed (bin/, .venv-*/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="${OPERATOR_SDK_VERSION:-v1.31.0}"
BIN="${ROOT}/bin/ansible-operator-${VERSION}"
VENV="${ANSIBLE_OPERATOR_VENV:-${ROOT}/.venv-ansible-operator}"
OURS="${ROOT}/.venv/bin/python"

if [[ ! -x "${BIN}" ]]; then
    echo "building ansible-operator ${VERSION} into ${BIN}" >&2
    module_dir="$(go mod download -json "github.com/operator-framework/operator-sdk@${VERSION}" |
        "${OURS}" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
    work="$(mktemp -d)"
    trap 'chmod -R u+w "${work}" 2>/dev/null; rm -rf "${work}"' EXIT
    cp -r "${module_dir}" "${work}/operator-sdk"
    chmod -R u+w "${work}/operator-sdk"
    mkdir -p "${ROOT}/bin"
    (
        cd "${work}/operator-sdk"
        go build -trimpath -o "${BIN}.tmp" \
            -ldflags "-X github.com/operator-framework/operator-sdk/internal/version.Version=${VERSION}" \
            ./cmd/ansible-operator
    )
    mv "${BIN}.tmp" "${BIN}"
fi
ln -sf "$(basename "${BIN}")" "${ROOT}/bin/ansible-operator"

if [[ ! -f "${VENV}/.installed" ]]; then
    echo "creating ${VENV}" >&2
    # The same Ansible and Kubernetes client versions as ours.
    pins="$("${OURS}" - <<'PY'
from importlib.metadata import version
print(" ".join(f"{name}=={version(name)}" for name in ("ansible-core", "ansible", "kubernetes")))
PY
)"
    "${OURS}" -m venv "${VENV}"
    "${VENV}/bin/pip" install --quiet --upgrade pip
    # shellcheck disable=SC2086  # pins is a word list
    "${VENV}/bin/pip" install --quiet ${pins} "ansible-runner>=2.3,<2.4" "ansible-runner-http==1.0.0"
    touch "${VENV}/.installed"
fi
"${BIN}" version >&2
