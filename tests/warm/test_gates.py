"""Each reuse mechanism of warm runs is on only where what it relies on holds, and a
runtime says once, naming it and why, when one is off (runner/warm/gates.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from runner import warm
from runner.warm import gates
from tests.warm.conftest import ready, runner_with, started

OFF_MESSAGE = "warm runs compute these themselves on this ansible-core, as cold runs do"


@pytest.mark.parametrize(
    "kind", [pytest.param("program", id="program"), pytest.param("module", id="module")]
)
def test_every_mechanism_holds_on_the_installed_ansible_core(kind: str) -> None:
    """Run on every supported line (make test, make test-ansible LINE=...): warm is fully warm."""
    off = gates.check(kind)
    assert off == {}, f"expected every {kind} mechanism on, these are off: {gates.describe(off)}"


@pytest.mark.parametrize(
    ("missing", "mechanism"),
    [
        pytest.param(
            gates._Needs("zipimport", "_compile_source_renamed"),
            gates.MODULE_CODE,
            id="attribute-gone",
        ),
        pytest.param(
            gates._Needs("zipimport", "_compile_source", ("path", "data")),
            gates.MODULE_CODE,
            id="parameters-changed",
        ),
        pytest.param(
            gates._Needs("runner.warm.no_such_module", "x"),
            gates.MODULE_CODE,
            id="module-gone",
        ),
    ],
)
def test_a_requirement_that_does_not_hold_is_named_as_why(
    missing: gates._Needs, mechanism: str
) -> None:
    reason = gates._missing(missing)
    assert reason is not None and missing.module in reason, (
        f"expected a reason naming {missing.module}, saw {reason!r}"
    )
    off = gates.check("module", probe=lambda needs: reason if needs.module == "zipimport" else None)
    assert off == {mechanism: reason}, f"expected only {mechanism} off, saw {off}"


def test_a_mechanism_without_its_ground_is_off_and_logged_once(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    pool = warm.Launchers(preload=["tests.warm.fixtures.changed_routing"])
    logger = logging.getLogger("tests.warm.gates")
    run = runner_with(pool, logger, tmp_path)
    try:
        with caplog.at_level(logging.WARNING, logger="runner.warm"):
            ready(pool, run)
            results = [run("inspect"), run("inspect")]
    finally:
        pool.close()
    for result in results:
        assert not result.failed, result.failed_tasks
        assert started(result) == "warm", started(result)
    said = [r for r in caplog.records if r.getMessage() == OFF_MESSAGE]
    assert len(said) == 1, f"expected one line saying what is off, saw {len(said)}"
    off = str(said[0].__dict__["off"])
    assert off.startswith(f"{gates.ROUTING} (") and "yaml_string_data" in off, (
        f"expected only {gates.ROUTING} off, for its renamed parameters; saw {off!r}"
    )
