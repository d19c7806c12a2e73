"""The dev cluster's own contract, on throwaway clusters in a temporary data dir:
``up`` twice is one cluster, the apiserver restarts in place, ``down`` leaves nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import devcluster
from devcluster import components, layout, ports, processes

pytestmark = pytest.mark.integration


def run_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devcluster", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def pids(data_dir: Path) -> dict[str, int]:
    where = layout.Layout(data_dir)
    handles = {name: processes.read(where.pid_file(name)) for name in components.ORDER}
    return {name: h.pid for name, h in handles.items() if h is not None}


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes whose argv mentions ``text`` (our data dir)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in argv:
            found.append(argv[:200])
    return found


@pytest.fixture(scope="module")
def throwaway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data dir for clusters of this module only; anything left running is stopped."""
    devcluster.build(skip_overridden=True)
    data_dir = tmp_path_factory.mktemp("devcluster")
    yield data_dir
    devcluster.Cluster(data_dir).stop()


def test_up_twice_is_one_cluster_and_down_leaves_nothing(throwaway: Path) -> None:
    first = run_cli(throwaway, "up")
    assert first.returncode == 0, f"expected `up` to succeed, saw:\n{first.stdout}{first.stderr}"
    started = pids(throwaway)
    assert sorted(started) == sorted(components.ORDER), f"expected every pidfile, saw {started}"
    state = layout.Layout(throwaway).read_state()
    assert state is not None

    second = run_cli(throwaway, "up")

    assert second.returncode == 0, f"expected 2nd `up` to succeed, saw:\n{second.stderr}"
    assert "already running" in second.stdout, f"expected a no-op, saw:\n{second.stdout}"
    assert pids(throwaway) == started, f"expected the same processes {started}"

    down = run_cli(throwaway, "down")

    assert down.returncode == 0, f"expected `down` to succeed, saw:\n{down.stderr}"
    leftovers = processes_mentioning(str(throwaway))
    assert leftovers == [], f"expected no process of the cluster left, saw {leftovers}"
    bound = [p for p in (state.ports.apiserver, state.ports.etcd_client) if ports.listening(p)]
    assert bound == [], f"expected ports freed, saw still listening: {bound}"
    assert not (throwaway / "kubeconfig").exists(), "expected the kubeconfig removed by down"


def test_apiserver_restarts_on_same_port_with_data_kept(throwaway: Path) -> None:
    cluster = devcluster.Cluster(throwaway, prefer_default_ports=False)
    cluster.start()
    cluster.kubectl("create", "namespace", "survivor")
    server_before = cluster.server
    old_pid = pids(throwaway)["kube-apiserver"]

    cluster.restart_apiserver()

    assert pids(throwaway)["kube-apiserver"] != old_pid, "expected a new apiserver process"
    assert cluster.server == server_before, f"expected {server_before}, saw {cluster.server}"
    seen = cluster.kubectl("get", "namespace", "survivor", "-o", "name").stdout.strip()
    assert seen == "namespace/survivor", f"expected the namespace to survive, saw {seen!r}"
    report = cluster.status()
    dead = [c.name for c in report.components if not c.alive]
    assert dead == [], f"expected every other component to ride out the restart, saw dead {dead}"
    cluster.stop()
    assert processes_mentioning(str(throwaway)) == []
