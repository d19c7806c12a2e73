"""On the embedded cluster: --max-runner-artifacts-size caps every CR's artifacts together,
and each CR keeps at least its last run (the one ``artifacts/latest`` names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.kube.client import Client
from testkit.harness import OperatorProcess
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

pytestmark = pytest.mark.integration


def run_dirs(operator: OperatorProcess, namespace: str, name: str) -> list[str]:
    artifacts = operator.workdir / "runner" / PROBE.group / PROBE.version / "Probe"
    artifacts = artifacts / namespace / name / "artifacts"
    return sorted(p.name for p in artifacts.iterdir() if p.is_dir() and not p.is_symlink())


def latest(operator: OperatorProcess, namespace: str, name: str) -> str:
    link = operator.workdir / "runner" / PROBE.group / PROBE.version / "Probe" / namespace
    return Path(link / name / "artifacts" / "latest").readlink().name


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        pytest.param((), 3, id="default-cap-keeps-every-run"),
        pytest.param(("--max-runner-artifacts-size=1",), 1, id="tiny-cap-keeps-the-last-run"),
    ],
)
def test_the_runner_dir_keeps_artifacts_under_the_cap(
    kube: Client,
    namespace: str,
    start_operator: StartOperator,
    args: tuple[str, ...],
    kept: int,
) -> None:
    operator = start_operator(probe_watches(), args=args)
    for name in ("a", "b"):
        kube.create(PROBE, probe(name, namespace, {"message": "0"}), namespace=namespace)
    for name in ("a", "b"):
        wait_condition(kube, namespace=namespace, name=name, kind="Successful", status="True")
    for step in (1, 2):
        for name in ("a", "b"):
            kube.patch(PROBE, name=name, namespace=namespace, body={"spec": {"message": f"{step}"}})
        for name in ("a", "b"):
            wait_condition(kube, namespace=namespace, name=name, kind="Successful", status="True")
    for name in ("a", "b"):
        dirs = run_dirs(operator, namespace, name)
        assert len(dirs) == kept, (
            f"{args or 'no flag'}: expected {name}'s artifacts to hold {kept} runs, saw {dirs}"
        )
        assert latest(operator, namespace, name) in dirs, (
            f"expected {name}'s artifacts/latest among its kept runs {dirs}"
        )
