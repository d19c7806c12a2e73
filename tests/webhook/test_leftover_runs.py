"""Admission runs' private data dirs (``<runner-dir>/.webhook/run-*``) left by a runner
killed mid-run are purged when the webhook side is built: they hold the requests'
objects (extra vars) and artifacts. Nothing else there goes, and no link is followed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from runner.config import sections
from runner.config.settings import Settings
from runner.webhook import hooks, service


def leftovers(runner_dir: Path, outside: Path) -> Path:
    """What a killed runner leaves, a link to ``outside`` among it; the runs' dir."""
    runs = runner_dir / hooks.RUNS_DIR
    for name in ("run-abc123", "run-def456"):
        (runs / name / "env").mkdir(parents=True)
        (runs / name / "env" / "extravars").write_text('{"password": "p"}')
        (runs / name / "artifacts" / "x").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep").write_text("not the runner's")
    (runs / "run-link").symlink_to(outside, target_is_directory=True)
    (runs / "run-file").write_text("stray")
    (runs / "notes").write_text("not a run")
    return runs


def test_leftover_webhook_runs_are_purged_at_start(tmp_path: Path) -> None:
    runner_dir = tmp_path / "runner"
    runs = leftovers(runner_dir, tmp_path / "outside")
    settings = Settings(
        watches_file=tmp_path / "watches.yaml",
        ansible=dataclasses.replace(sections.AnsibleSettings(), runner_dir=runner_dir),
    )
    built = service.build(
        settings=settings,
        runner=cast(Any, None),
        client=cast(Any, None),
        cache=None,
        caches=lambda gvk: False,
        observer=None,
        run_env={},
    )
    # Purged even when this start serves no webhook: nothing else would remove them.
    assert built is None, "expected no webhooks served (no watch has one)"
    left = sorted(p.name for p in runs.iterdir())
    assert left == ["notes"], f"expected only the non-run entry left in {runs}, saw {left}"
    kept = sorted(p.name for p in (tmp_path / "outside").iterdir())
    assert kept == ["keep"], f"expected the link's target untouched, saw {kept}"


def test_a_runner_dir_without_webhook_runs_is_fine(tmp_path: Path) -> None:
    purged = service.purge_leftovers(tmp_path / "runner" / hooks.RUNS_DIR)
    assert purged == 0, f"expected nothing purged where nothing is, saw {purged}"
