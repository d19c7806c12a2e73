"""The ansible-core lines the runner supports (2.19, 2.20, 2.21) and where roles see a difference.

The same tests run on every supported line: ``make test`` with the main venv (the
newest line its Python allows, ``hack/venv.py``) and ``make test-ansible LINE=<line>``
(``make test-lanes``: 2.20 on Python 3.12, 2.19 on 3.11) in venvs of their own; each
sets ``PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE`` so a lane that silently ran another line
fails. ansible-operator's own images ship 2.18, which templated numbers into strings
(docs/migrating.md); every supported line keeps the expression's type.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import devcluster
from runner.ansible import launch, lines
from runner.ansible import spec as ansible_spec
from runner.kube import client, errors
from runner.kube.types import GVK
from tests.ansible.conftest import (
    ANSIBLE_CORE,
    ROLES,
    Captured,
    RunPlaybook,
    ansible_core_line,
    debug_outputs,
)

CONFIGMAP = GVK("", "v1", "ConfigMap")
SUPPORTED = lines.SUPPORTED
#: The line a test lane pins (``make test``, ``make test-ansible LINE=2.20``); unset: any line.
EXPECTED_ENV = "PLAYBOOK_OPERATOR_TEST_ANSIBLE_CORE"


def test_runs_use_the_installed_supported_ansible_core(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured]
) -> None:
    result = run_playbook("version")
    assert not result.failed, result.failed_tasks
    _, handler = captured
    ran = ansible_core_line(str(debug_outputs(handler)["Version"]))
    assert ran == ANSIBLE_CORE, (
        f"plays ran on ansible-core {ran}, expected the installed {ANSIBLE_CORE} "
        f"(ansible-playbook from another environment?)"
    )
    expected = os.environ.get(EXPECTED_ENV)
    if expected:
        assert ran == expected, f"this lane pins ansible-core {expected}, plays ran on {ran}"
    assert ran in SUPPORTED, f"ansible-core {ran} is not one of the supported {SUPPORTED}"


@pytest.fixture
def sizer_run(
    runner: launch.AnsibleRunner,
    captured: tuple[logging.Logger, Captured],
    cluster: devcluster.Cluster,
    namespace: str,
    tmp_path: Path,
) -> launch.RunResult:
    """The ``sizer`` role for a CR ``s`` with ``spec.size: 3``, as the operator runs it."""
    logger, _ = captured
    spec = ansible_spec.RunSpec(
        ident="sizer",
        private_data_dir=tmp_path / "pdd",
        role="sizer",
        roles_path=(ROLES,),
        extravars={"size": 3, "ansible_operator_meta": {"name": "s", "namespace": namespace}},
        envvars={"K8S_AUTH_KUBECONFIG": str(cluster.kubeconfig)},
    )
    return runner.run(spec, log=logger)


def test_a_number_templated_into_configmap_data_fails_the_role(
    sizer_run: launch.RunResult, kube: client.Client, namespace: str
) -> None:
    messages = [t.message for t in sizer_run.failed_tasks]
    assert [t.task for t in sizer_run.failed_tasks] == ["Record the memory in a ConfigMap"], (
        messages
    )
    assert any("cannot unmarshal number" in m for m in messages), (
        f"expected the API server's rejection of a number in ConfigMap data, saw {messages}"
    )
    with pytest.raises(errors.NotFoundError):
        kube.get(CONFIGMAP, name="s-size", namespace=namespace)
