"""The settings are built once, in sections: each flag, ``--config`` key and environment
override lands, resolved, in the section of the stage that reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.base import logs
from runner.kube.types import GVK
from tests.cli.settings_from import build, one_watch

K = GVK("g.io", "v1", "K")  # the kind of one_watch's entry


@pytest.fixture
def watches_file(tmp_path: Path) -> Path:
    return one_watch(tmp_path)


def section_value(settings: Any, path: str) -> object:
    value = settings
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(
    ("flags", "path", "expected"),
    [
        pytest.param(("--ansible-verbosity=5",), "ansible.verbosity", 5, id="ansible"),
        pytest.param(("--ansible-args=-e x=1",), "ansible.args", "-e x=1", id="ansible-args"),
        pytest.param(("--max-concurrent-reconciles=3",), "reconcile.workers_for", 3, id="workers"),
        pytest.param(("--reconcile-period=1m",), "reconcile.reconcile_period", 60.0, id="period"),
        pytest.param(("--backoff-max=7s",), "reconcile.backoff_max", 7.0, id="backoff"),
        pytest.param(("--proxy-port=8888",), "reconcile.proxy_port", 8888, id="proxy-port"),
        pytest.param(("--leader-elect",), "election.leader_elect", True, id="election"),
        pytest.param(("--leader-election-id=x",), "election.lease_name", "x", id="lease-name"),
        pytest.param(("--metrics-addr=:9",), "serving.metrics_bind_address", ":9", id="serving"),
        pytest.param(("--webhook-port=9444",), "webhooks.port", 9444, id="webhooks"),
        pytest.param(("--zap-devel",), "logging.format", logs.LogFormat.CONSOLE, id="logging"),
        pytest.param(("--runner-dir=/r",), "ansible.runner_dir", Path("/r"), id="runner-dir"),
    ],
)
def test_a_flag_lands_in_its_section(
    watches_file: Path, flags: tuple[str, ...], path: str, expected: object
) -> None:
    seen = section_value(build(watches_file, *flags), path)
    if callable(seen):
        seen = seen(K)
    assert seen == expected, f"{' '.join(flags)}: expected {path} == {expected!r}, saw {seen!r}"


def test_manager_config_values_land_in_sections(watches_file: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "health: {healthProbeBindAddress: ':7000'}\n"
        "leaderElection: {leaderElect: true, resourceName: from-file, retryPeriod: 5s}\n"
    )
    built = build(watches_file, f"--config={config}")
    seen = (
        built.serving.health_probe_bind_address,
        built.election.leader_elect,
        built.election.lease_name,
        built.election.retry_period,
    )
    assert seen == (":7000", True, "from-file", 5.0), f"expected the file's values, saw {seen}"


def test_environment_overrides_are_resolved_when_built(watches_file: Path) -> None:
    built = build(
        watches_file,
        "--sharded",
        environ={
            "MAX_CONCURRENT_RECONCILES_K_G_IO": "6",
            "ANSIBLE_VERBOSITY_K_G_IO": "4",
            "OPERATOR_NAME": "op",
            "POD_NAME": "pod-1",
        },
    )
    seen = (
        dict(built.reconcile.workers),
        dict(built.ansible.verbosities),
        built.election.lease_name,
        built.election.replica,
        built.election.shard_group,
    )
    expected = ({K: 6}, {K: 4}, "op", "pod-1", "op")
    assert seen == expected, f"expected {expected}, saw {seen}"
