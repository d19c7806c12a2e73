"""--max-concurrent-reconciles defaults to the container's CPU quota, not the node's CPUs.

A pod limited to 500m on a 64-core node would otherwise start 64 ansible-playbook
processes per watch and be throttled (and OOM-killed) into the ground.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.config.settings import default_workers


def cgroup(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


CPUS = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("files", "workers"),
    [
        pytest.param({"cpu.max": "50000 100000\n"}, 1, id="v2-half-a-cpu"),
        pytest.param({"cpu.max": "150000 100000\n"}, 2, id="v2-rounded-up"),
        pytest.param({"cpu.max": "300000 100000\n"}, 3, id="v2-three"),
        pytest.param({"cpu.max": "1000 100000\n"}, 1, id="v2-at-least-one"),
        pytest.param({"cpu.max": "max 100000\n"}, CPUS, id="v2-unlimited"),
        pytest.param(
            {"cpu/cpu.cfs_quota_us": "250000\n", "cpu/cpu.cfs_period_us": "100000\n"},
            3,
            id="v1",
        ),
        pytest.param(
            {
                "cpu,cpuacct/cpu.cfs_quota_us": "100000\n",
                "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            },
            1,
            id="v1-joint-controller",
        ),
        pytest.param(
            {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"},
            CPUS,
            id="v1-unlimited",
        ),
        pytest.param({}, CPUS, id="no-cgroup"),
        pytest.param({"cpu.max": "garbage\n"}, CPUS, id="unreadable"),
    ],
)
def test_default_workers_follow_the_cpu_quota(
    files: dict[str, str], workers: int, tmp_path: Path
) -> None:
    seen = default_workers(cgroup(tmp_path, files))
    assert seen == workers, f"cgroup files {files}: expected {workers} workers, saw {seen}"
