"""Recycling's flags reach the settings and its counter is exported, with both reasons
from the start (runner/config/flags.py, runner/config/settings.py, runner/warm/families.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import cli
from runner.operations.metrics import runtime
from runner.prometheus import exposition
from runner.warm import families as warm_families
from runner.warm import recycle
from tests.cli.settings_from import build, one_watch


@pytest.mark.parametrize(
    ("flags", "runs", "rss"),
    [
        pytest.param((), 1000, 512, id="defaults"),
        pytest.param(("--warm-launcher-max-runs=3",), 3, 512, id="max-runs"),
        pytest.param(("--warm-launcher-max-rss=0",), 1000, 0, id="no-rss-cap"),
    ],
)
def test_recycling_flags_reach_the_settings(
    flags: tuple[str, ...], runs: int, rss: int, tmp_path: Path
) -> None:
    settings = build(one_watch(tmp_path), *flags)
    seen = (settings.ansible.warm_launcher_max_runs, settings.ansible.warm_launcher_max_rss)
    assert seen == (runs, rss), f"{flags}: expected max runs/RSS {(runs, rss)}, got {seen}"


@pytest.mark.parametrize(
    "flag",
    [
        pytest.param("--warm-launcher-max-runs=-1", id="negative-runs"),
        pytest.param("--warm-launcher-max-rss=lots", id="word-rss"),
    ],
)
def test_bad_recycling_limits_are_refused(flag: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.parse(["run", flag])
    assert stopped.value.code == 2, f"{flag}: expected exit 2, got {stopped.value.code}"


def test_recycles_are_counted_by_reason() -> None:
    registry = runtime.Metrics()
    counts = {reason: 0 for reason in recycle.REASONS} | {"runs": 2}
    registry.add(
        warm_families.LauncherCollector(
            memory=lambda: 0,
            running=lambda: 2,
            outcomes=lambda: {},
            recycles=lambda: counts,
        )
    )
    text = exposition.exposition(registry.registry).decode()
    for line in (
        'playbook_operator_warm_launcher_recycles_total{reason="rss"} 0',
        'playbook_operator_warm_launcher_recycles_total{reason="runs"} 2',
    ):
        assert line in text.splitlines(), f"expected {line!r} in the exposition:\n{text}"
