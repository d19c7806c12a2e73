"""--reconcile-timeout: the default time limit of one Ansible run."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.base import errors
from tests.cli.settings_from import build, one_watch


@pytest.mark.parametrize(
    ("flags", "seconds"),
    [
        pytest.param((), 3600.0, id="default-one-hour"),
        pytest.param(("--reconcile-timeout=90s",), 90.0, id="given"),
        pytest.param(("--reconcile-timeout=0",), 0.0, id="zero-disables"),
    ],
)
def test_reconcile_timeout_flag(flags: tuple[str, ...], seconds: float, tmp_path: Path) -> None:
    settings = build(one_watch(tmp_path), *flags)
    assert settings.reconcile.reconcile_timeout == seconds, (
        f"expected {seconds}, saw {settings.reconcile.reconcile_timeout}"
    )


def test_a_negative_reconcile_timeout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match="--reconcile-timeout must not be negative"):
        build(one_watch(tmp_path), "--reconcile-timeout=-5s")
