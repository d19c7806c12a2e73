"""Under ``--dist loadgroup`` the tests of one group run on one worker.

Runs a few pure tests of the ``default-runner-dir`` group (runners without
--runner-dir: they may not run at once) and of no group on two xdist workers, and
reads from pytest's verbose lines which worker ran each. xdist's own loadgroup, with
pytest 9.2, schedules each test alone (testkit/scheduling.py says why).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GROUPED = (
    "tests/cli/test_start_up.py::test_version",
    "tests/cli/test_start_up.py::test_a_malformed_address_stops_the_runner",
    "tests/proxy/test_proxy_port.py::test_a_taken_proxy_port_stops_the_runner_naming_flag_and_port",
)
UNGROUPED = ("tests/cli/test_flags.py",)
OPTIONS = ("-p", "no:cacheprovider", "-o", "addopts=", *GROUPED, *UNGROUPED)


def test_a_group_runs_on_one_worker() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", *OPTIONS],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "KUBECONFIG": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    workers: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] .*?(tests/\S+)", done.stdout, re.M):
        module = nodeid.split("::")[0]
        if any(nodeid.startswith(g) for g in GROUPED):
            workers.setdefault("default-runner-dir", set()).add(worker)
        else:
            workers.setdefault(module, set()).add(worker)
    assert workers.get("default-runner-dir"), (
        f"expected the grouped tests to run, saw:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )
    assert len(workers["default-runner-dir"]) == 1, (
        f"expected the default-runner-dir group on one worker, saw workers {workers}"
    )
