"""Whatever ``--warm-launcher-idle-seconds`` or its environment variable hold, the settings
either refuse it with a ConfigError naming it, or carry a number of seconds a launcher
pool's timer can wait (0 to a year): never another exception, never a value the idle
thread would crash on (``threading.Condition.wait`` overflows past ``time_t``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.base import errors
from runner.config import sections
from tests.cli.settings_from import build, one_watch

ENV = sections.WARM_LAUNCHER_IDLE_ENV


@pytest.fixture(scope="module")
def watches() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="idle-properties-") as directory:
        yield one_watch(Path(directory))


def _settled(watches: Path, *flags: str, environ: dict[str, str], named: str) -> None:
    try:
        seen = build(watches, *flags, environ=environ).ansible.warm_launcher_idle_seconds
    except errors.ConfigError as refused:
        assert named in str(refused), f"expected the refusal to name {named}: {refused}"
        return
    assert isinstance(seen, int), f"expected whole seconds, got {seen!r}"
    assert 0 <= seen <= sections.WARM_LAUNCHER_IDLE_MAX, f"{flags} {environ}: accepted {seen}"


@given(value=st.one_of(st.text(), st.integers().map(str), st.integers().map(lambda n: f" {n} ")))
def test_any_environment_value_is_refused_or_waitable(watches: Path, value: str) -> None:
    _settled(watches, environ={ENV: value}, named=ENV)


@given(value=st.integers(min_value=0))
def test_any_flag_value_is_refused_or_waitable(watches: Path, value: int) -> None:
    flag = f"--warm-launcher-idle-seconds={value}"
    _settled(watches, flag, environ={ENV: "7"}, named="--warm-launcher-idle-seconds")
