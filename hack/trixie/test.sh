#!/usr/bin/env bash
# The Ansible lane on one ansible-core line that needs Python >= 3.12 (2.20, 2.21): the
# given tests run with pytest inside the trixie root (hack/trixie/root.sh makes it, and the
# line's venv, on first use; hack/trixie/enter.sh runs them there) against the embedded
# cluster. `make test-ansible LINE=2.20` and `make test-ansible-2.21` call it.
#
#   hack/trixie/test.sh LINE [PYTEST ARG...]
#
# PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE=LINE makes tests/ansible/test_versions.py fail if the
# plays ran on another line. Where the root cannot be made (not root, no debootstrap) the
# lane is skipped with the reason, exit 0, as `make test` expects on such hosts.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if (($# < 1)) || [[ ! "$1" =~ ^[0-9]+\.[0-9]+$ ]]; then
    echo "usage: hack/trixie/test.sh LINE [PYTEST ARG...]   (LINE: 2.20, 2.21)" >&2
    exit 2
fi
LINE="$1"
shift
if reason="$("${HERE}/root.sh" --unavailable)"; then
    echo "test-ansible-${LINE} skipped: ${reason}"
    exit 0
fi
"${HERE}/root.sh" "${LINE}" >/dev/null
# An empty KUBECONFIG: the tests use the embedded cluster (.cluster/kubeconfig) themselves.
export KUBECONFIG='' PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE="${LINE}"
exec "${HERE}/enter.sh" --line "${LINE}" -- pytest "$@"
