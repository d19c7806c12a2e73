"""Start-up errors: a bad watches.yaml stops the runner before it watches anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import runner


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # No cluster is reachable: a config error must be reported before any connection.
        env={"KUBECONFIG": str(cwd / "missing-kubeconfig"), "PATH": "/usr/bin:/bin"},
    )


def test_version(tmp_path: Path) -> None:
    answer = run("--version", cwd=tmp_path)
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == f"playbook-operator {runner.__version__}"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            "- version: v1\n  group: g.io\n  kind: K\n  role: roles/k\n  reconcilePeriode: 1m\n",
            "entry 1 (g.io/v1/K), field 'reconcilePeriode'",
            id="unknown-key",
        ),
        pytest.param(
            "- version: v1\n  group: g.io\n  kind: K\n  role: roles/nothere\n",
            "field 'role'",
            id="missing-role",
        ),
        pytest.param(
            "- version: v1\n  group: g.io\n  kind: K\n  role: roles/k\n  reconcilePeriod: soon\n",
            "field 'reconcilePeriod'",
            id="bad-duration",
        ),
        pytest.param(
            "- {version: v1, group: g.io, kind: K, role: roles/k}\n"
            "- {version: v1, group: g.io, kind: K, role: roles/k}\n",
            "entry 2 (g.io/v1/K)",
            id="duplicate-gvk",
        ),
    ],
)
def test_invalid_watches_stop_the_runner(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "roles" / "k" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "k" / "tasks" / "main.yml").write_text("[]\n")
    (tmp_path / "watches.yaml").write_text(content)
    answer = run("run", "--watches-file=./watches.yaml", cwd=tmp_path)
    assert answer.returncode == 2, f"expected exit 2, saw {answer.returncode}: {answer.stderr}"
    assert "watches.yaml" in answer.stderr and expected in answer.stderr, answer.stderr


def test_metrics_rbac_without_tls_is_refused(tmp_path: Path) -> None:
    answer = run("run", "--metrics-require-rbac", cwd=tmp_path)
    assert answer.returncode == 2, answer.stderr
    assert "--metrics-require-rbac needs --metrics-secure" in answer.stderr, answer.stderr
