"""make check's set holds no test that runs Ansible or needs the cluster, the slow
scenarios are in the lane, and tests that share the Memcached CRD share a worker.

Collects (``--collect-only``, nothing runs) a few modules with the suite's own
conftest in one pytest process, and reads the markers it put on each test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = """
import json, pytest
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    marks = {
        item.nodeid: sorted(
            m.name + (":" + str(m.args[0]) if m.name == "xdist_group" else "")
            for m in item.iter_markers()
            if m.name in ("integration", "lane", "exclusive", "xdist_group")
        )
        for item in items
    }
    print("MARKS " + json.dumps(marks))
"""

MODULES = {
    "warm-launchers": "tests/warm/test_recycle.py",
    "ansible-runs": "tests/ansible/test_runs.py",
    "webhook-roles": "tests/memcached/test_webhook_roles.py",
    "flags": "tests/cli/test_flags.py",
    "real-node": "tests/cluster/test_real_node.py",
    "memcached-levels": "tests/memcached/test_levels.py",
    "reconcile": "tests/runner/test_reconcile.py",
    "warm-lifecycle": "tests/warm/test_lifecycle.py",
}


OPTIONS = ("-p", "no:cacheprovider", *MODULES.values())


@pytest.fixture(scope="module")
def marks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    plugin_dir = tmp_path_factory.mktemp("plugin")
    (plugin_dir / "showmarks.py").write_text(PLUGIN)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "showmarks", *OPTIONS],
        cwd=ROOT,
        env={"PYTHONPATH": f"{plugin_dir}:{ROOT}", "PATH": "/usr/bin:/bin", "KUBECONFIG": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("MARKS ")]
    assert lines, f"expected the collected tests' marks, saw:\n{done.stdout}\n{done.stderr}"
    found: dict[str, list[str]] = json.loads(lines[0][len("MARKS ") :])
    return found


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        pytest.param("warm-launchers", {"integration"}, id="warm-launchers-not-in-check"),
        pytest.param("ansible-runs", {"integration"}, id="ansible-runs-not-in-check"),
        pytest.param("webhook-roles", {"integration"}, id="role-runs-not-in-check"),
        pytest.param("flags", set(), id="pure-python-in-check"),
    ],
)
def test_every_test_of_a_module_is_placed(
    marks: dict[str, list[str]], module: str, expected: set[str]
) -> None:
    path = MODULES[module]
    seen = {nodeid: set(found) for nodeid, found in marks.items() if nodeid.startswith(path)}
    assert seen, f"expected tests collected from {path}, saw none among {len(marks)}"
    # Marked at least so (a test may also have a group); unmarked when nothing is expected.
    wrong = {
        nodeid: sorted(found)
        for nodeid, found in seen.items()
        if not (expected <= found if expected else not found)
    }
    assert not wrong, f"expected every test of {path} marked {sorted(expected)}, saw {wrong}"


def test_tests_on_the_memcached_crd_share_a_worker(marks: dict[str, list[str]]) -> None:
    """test_deploy.py deletes the Memcached CRD when it ends: its users may not run beside it."""
    grouped = {
        nodeid: found
        for nodeid, found in marks.items()
        if nodeid.startswith(MODULES["memcached-levels"]) and "crd" in nodeid
    }
    assert grouped, f"expected the CRD tests of {MODULES['memcached-levels']}, saw none"
    apart = {n: f for n, f in grouped.items() if "xdist_group:memcached-crd" not in f}
    assert not apart, f"expected them all in xdist_group memcached-crd, saw {apart}"


def test_the_real_node_scenarios_are_in_the_lane(marks: dict[str, list[str]]) -> None:
    """test_real_node.py's tests on the cluster run in the lane; its preflight checks
    (pure Python) stay in make check. The group goes by module (xdist's controller sees
    only ids), so the preflight checks have it too: they share the scenarios' worker."""
    path = MODULES["real-node"]
    seen = {nodeid: set(found) for nodeid, found in marks.items() if nodeid.startswith(path)}
    group = "xdist_group:cluster-wide"
    wrong = {
        nodeid: sorted(found)
        for nodeid, found in seen.items()
        if found != ({group} if "preflight" in nodeid else {"integration", "lane", group})
    }
    assert seen, f"expected tests collected from {path}, saw none"
    assert not wrong, f"expected preflight checks in make check, the rest in the lane: {wrong}"


def test_a_test_restarting_the_api_server_runs_alone(marks: dict[str, list[str]]) -> None:
    """It would fail whatever runs beside it, and the check of ~/.ansible/tmp would see
    other workers' runs: make test runs them after the parallel phase."""
    alone = {n for n, found in marks.items() if "exclusive" in found}
    expected = {
        f"{MODULES['reconcile']}::test_reconciles_after_apiserver_restart",
        f"{MODULES['warm-lifecycle']}::"
        "test_a_run_killed_by_its_timeout_leaves_no_process_and_no_temp_dir",
    }
    assert alone == expected, f"expected only {expected} marked exclusive, saw {alone}"
