"""Every benchmark's command line still parses (``python -m bench.<name> --help``), and the
figures the benchmarks print are formatted as docs/performance.md shows them.

The benchmarks themselves need the cluster and minutes each; these tests only import each
entry point and ask it for its help, in-process, so a split or a rename of a shared
``bench`` module that breaks an import shows in ``make check``.
"""

from __future__ import annotations

import importlib
import re
import sys

import pytest

from bench import embedded, tables

#: ``python -m`` names of every benchmark (the Makefile's ``bench*`` and ``chaos`` targets).
ENTRY_POINTS = (
    "bench.cache_budget",
    "bench.chaos.__main__",
    "bench.compare",
    "bench.initial_list",
    "bench.memcached_scale",
    "bench.reconcile",
    "bench.restart_storm",
    "bench.scale_soak",
    "bench.sharding",
    "bench.webhook",
)


def _help(name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``python -m <name> --help`` prints, after checking that it exits 0."""
    module = importlib.import_module(name)
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as exited:
        module.main()
    out = capsys.readouterr().out
    assert exited.value.code == 0, f"expected {name} --help to exit 0, saw {exited.value.code}"
    return out


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in ENTRY_POINTS])
def test_help_exits_zero(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _help(name, monkeypatch, capsys)
    assert out.startswith("usage:"), f"expected {name} --help to print its usage, saw {out!r}"


@pytest.mark.parametrize(
    "flag",
    [
        pytest.param(flag, id=flag)
        for flag in ("--restart-crs", "--no-idle-release", "--write-doc", "--doc")
    ],
)
def test_compare_help_lists(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    options = _help("bench.compare", monkeypatch, capsys).partition("options:")[2]
    listed = re.search(rf"^\s+{re.escape(flag)}(\s|$)", options, re.MULTILINE)
    assert listed, f"expected bench.compare --help to list {flag}, saw {options}"


@pytest.mark.parametrize(
    ("values", "shown"),
    [
        pytest.param([], "-", id="none"),
        pytest.param([1.5], "1.50 s", id="one"),
        pytest.param([1.0, 3.0, 2.0], "2.00 s (1.00-3.00)", id="median-and-range"),
    ],
)
def test_spread(values: list[float], shown: str) -> None:
    assert tables.spread(values) == shown, f"expected {shown!r}, saw {tables.spread(values)!r}"


@pytest.mark.parametrize(
    ("numerator", "denominator", "shown"),
    [
        pytest.param(1.0, 4.0, "0.25", id="ratio"),
        pytest.param(None, 4.0, "-", id="missing"),
        pytest.param(1.0, float("nan"), "-", id="nan"),
    ],
)
def test_ratio(numerator: float | None, denominator: float | None, shown: str) -> None:
    assert tables.ratio(numerator, denominator) == shown


def test_table_is_markdown() -> None:
    expected = "| a | b |\n| --- | --- |\n| 1 | 2 |"
    assert tables.table(["a", "b"], [["1", "2"]]) == expected


@pytest.mark.parametrize(
    ("quantity", "count"),
    [
        pytest.param("110", 110, id="plain"),
        pytest.param("1M", 10**6, id="decimal"),
        pytest.param("2Ki", 2048, id="binary"),
    ],
)
def test_pod_counts_read_quantities(quantity: str, count: int) -> None:
    assert embedded.count(quantity) == count, f"expected {count} for {quantity!r}"
