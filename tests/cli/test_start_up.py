"""Start-up errors: a bad watches.yaml or an address that cannot be served stops the
runner before it watches anything, with one line naming the cause."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # No cluster is reachable: a config error must be reported before any connection.
        env={
            "KUBECONFIG": str(cwd / "missing-kubeconfig"),
            "PATH": "/usr/bin:/bin",
            # The tree under test, when it is not the installed one (a worktree).
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
            **(env or {}),
        },
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


@pytest.mark.parametrize(
    "variable",
    [
        pytest.param("ANSIBLE_VERBOSITY_K_G_IO", id="verbosity"),
        pytest.param("MAX_CONCURRENT_RECONCILES_K_G_IO", id="workers"),
        pytest.param("WORKER_K_G_IO", id="deprecated-workers"),
    ],
)
def test_a_bad_per_watch_variable_stops_the_runner_naming_it(tmp_path: Path, variable: str) -> None:
    # Read at start-up, not in a reconcile after Running was written.
    (tmp_path / "roles" / "k" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "k" / "tasks" / "main.yml").write_text("[]\n")
    (tmp_path / "watches.yaml").write_text("- {version: v1, group: g.io, kind: K, role: roles/k}\n")
    answer = run("run", "--watches-file=./watches.yaml", cwd=tmp_path, env={variable: "loud"})
    assert answer.returncode == 2, f"expected exit 2, saw {answer.returncode}: {answer.stderr}"
    assert f"${variable}: not an integer: 'loud'" in answer.stderr, answer.stderr


def test_metrics_rbac_without_tls_is_refused(tmp_path: Path) -> None:
    answer = run("run", "--metrics-require-rbac", cwd=tmp_path)
    assert answer.returncode == 2, answer.stderr
    assert "--metrics-require-rbac needs --metrics-secure" in answer.stderr, answer.stderr


# A kubeconfig that loads but whose server nothing answers: listeners are bound
# before the runner talks to the cluster, so a taken port must be reported first.
UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
LISTEN_FLAGS = (
    "--metrics-bind-address",
    "--health-probe-bind-address",
    "--custom-metrics-bind-address",
)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


@pytest.mark.parametrize("flag", [pytest.param(flag, id=flag[2:]) for flag in LISTEN_FLAGS])
def test_a_taken_port_stops_the_runner_naming_flag_and_port(
    tmp_path: Path, taken_port: int, flag: str
) -> None:
    (tmp_path / "roles" / "k" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "k" / "tasks" / "main.yml").write_text("[]\n")
    (tmp_path / "watches.yaml").write_text("- {version: v1, group: g.io, kind: K, role: roles/k}\n")
    (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
    others = [f"{other}=0" for other in LISTEN_FLAGS if other != flag]
    answer = run(
        "run",
        f"--kubeconfig={tmp_path / 'kubeconfig'}",
        f"{flag}=127.0.0.1:{taken_port}",
        *others,
        cwd=tmp_path,
    )
    assert answer.returncode == 2, f"expected exit 2, saw {answer.returncode}: {answer.stderr}"
    last = answer.stderr.strip().splitlines()[-1]
    assert flag in last and f"port {taken_port} is already in use" in last, (
        f"expected one line naming {flag} and port {taken_port}, saw:\n{answer.stderr}"
    )
    assert "Traceback" not in answer.stderr, answer.stderr


@pytest.mark.parametrize(
    "value",
    [pytest.param(":http", id="not-a-number"), pytest.param(":70000", id="out-of-range")],
)
def test_a_malformed_address_stops_the_runner(tmp_path: Path, value: str) -> None:
    (tmp_path / "roles" / "k" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "k" / "tasks" / "main.yml").write_text("[]\n")
    (tmp_path / "watches.yaml").write_text("- {version: v1, group: g.io, kind: K, role: roles/k}\n")
    (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
    answer = run(
        "run",
        f"--kubeconfig={tmp_path / 'kubeconfig'}",
        f"--metrics-bind-address={value}",
        "--health-probe-bind-address=0",
        "--custom-metrics-bind-address=0",
        cwd=tmp_path,
    )
    assert answer.returncode == 2, f"expected exit 2, saw {answer.returncode}: {answer.stderr}"
    assert f"--metrics-bind-address={value}: expected [host]:port" in answer.stderr, answer.stderr
