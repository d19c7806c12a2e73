"""Recycling's and the idle release's flags reach the settings, and their counter is
exported with every reason from the start (runner/config/flags.py, builder.py,
runner/warm/families.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import cli
from runner.base import errors
from runner.config import sections
from runner.operations import runs
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
        pytest.param("--warm-launcher-idle-seconds=-1", id="negative-idle"),
        pytest.param("--warm-launcher-idle-seconds=2m", id="duration-idle"),
    ],
)
def test_bad_recycling_limits_are_refused(flag: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.parse(["run", flag])
    assert stopped.value.code == 2, f"{flag}: expected exit 2, got {stopped.value.code}"


IDLE_ENV = sections.WARM_LAUNCHER_IDLE_ENV


@pytest.mark.parametrize(
    ("flags", "environ", "expected"),
    [
        pytest.param((), {}, 120, id="default"),
        pytest.param(("--warm-launcher-idle-seconds=30",), {}, 30, id="flag"),
        pytest.param(("--warm-launcher-idle-seconds=0",), {}, 0, id="flag-never"),
        pytest.param((), {IDLE_ENV: "45"}, 45, id="env"),
        pytest.param((), {IDLE_ENV: "0"}, 0, id="env-never"),
        pytest.param((), {IDLE_ENV: ""}, 120, id="env-empty"),
        pytest.param(("--warm-launcher-idle-seconds=30",), {IDLE_ENV: "45"}, 30, id="flag-wins"),
    ],
)
def test_idle_seconds_reach_the_settings(
    flags: tuple[str, ...], environ: dict[str, str], expected: int, tmp_path: Path
) -> None:
    settings = build(one_watch(tmp_path), *flags, environ=environ)
    seen = settings.ansible.warm_launcher_idle_seconds
    assert seen == expected, f"{flags} {environ}: expected idle seconds {expected}, got {seen}"


@pytest.mark.parametrize(
    "value", [pytest.param("-1", id="negative"), pytest.param("2m", id="word")]
)
def test_bad_idle_seconds_variable_is_refused(value: str, tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError) as refused:
        build(one_watch(tmp_path), environ={IDLE_ENV: value})
    assert IDLE_ENV in str(refused.value), f"expected ${IDLE_ENV} named, got {refused.value}"


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
        'playbook_operator_warm_launcher_recycles_total{reason="idle"} 0',
        'playbook_operator_warm_launcher_recycles_total{reason="rss"} 0',
        'playbook_operator_warm_launcher_recycles_total{reason="runs"} 2',
    ):
        assert line in text.splitlines(), f"expected {line!r} in the exposition:\n{text}"


def test_the_runtime_hands_the_idle_setting_to_its_launchers(tmp_path: Path) -> None:
    settings = build(one_watch(tmp_path), "--warm-launcher-idle-seconds=7")
    launchers = runs.launchers_for(settings.ansible, registry=runtime.Metrics())
    assert launchers is not None, "expected warm launchers with the default --warm"
    try:
        seen = launchers._idle._seconds  # what the pool was given
        assert seen == 7, f"expected the pool to release after 7 s idle, it was given {seen}"
    finally:
        launchers.close()
