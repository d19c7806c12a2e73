"""A run that cannot start raises ``AnsibleLaunchError`` with the reason, never a raw
``OSError``/``ValueError`` nor a ``RunResult`` that hides why: the reconciler writes the
reason into the CR's Failure condition."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from runner.ansible import launch
from runner.ansible import spec as ansible_spec
from runner.base import errors
from tests.ansible.conftest import PLAYBOOKS, Captured


def spec(private_data_dir: Path, **fields: object) -> ansible_spec.RunSpec:
    return ansible_spec.RunSpec(
        ident="launch",
        private_data_dir=private_data_dir,
        playbook=PLAYBOOKS / "debug.yml",
        extravars={},
        **fields,  # type: ignore[arg-type]
    )


def test_a_missing_ansible_playbook_is_a_launch_error(
    tmp_path: Path, captured: tuple[logging.Logger, Captured]
) -> None:
    missing = tmp_path / "bin" / "ansible-playbook"
    runner = launch.AnsibleRunner(ansible_playbook=str(missing))
    with pytest.raises(errors.AnsibleLaunchError, match=str(missing)):
        runner.run(spec(tmp_path / "pdd"), log=captured[0])


@pytest.mark.parametrize(
    ("where", "cmdline", "expected"),
    [
        pytest.param("file/pdd", "", "Not a directory", id="private-dir-under-a-file"),
        pytest.param("pdd", "--tags 'only", "--ansible-args", id="unbalanced-quote"),
    ],
)
def test_a_run_that_cannot_be_prepared_is_a_launch_error(
    *,
    runner: launch.AnsibleRunner,
    captured: tuple[logging.Logger, Captured],
    tmp_path: Path,
    where: str,
    cmdline: str,
    expected: str,
) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(errors.AnsibleLaunchError, match=expected):
        runner.run(spec(tmp_path / where, cmdline=cmdline), log=captured[0])


def test_a_launch_error_does_not_repeat_the_ansible_args(
    *,
    runner: launch.AnsibleRunner,
    captured: tuple[logging.Logger, Captured],
    tmp_path: Path,
) -> None:
    # The message reaches the CR's status and Events; --ansible-args may carry a secret.
    with pytest.raises(errors.AnsibleLaunchError) as raised:
        runner.run(spec(tmp_path / "pdd", cmdline="-e password=hunter2 'x"), log=captured[0])
    assert "hunter2" not in str(raised.value), f"the flag's value is in: {raised.value}"
