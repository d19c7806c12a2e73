"""``bench-compare --write-doc``: the side-by-side table is a pure function of the
figures, and writing it into the doc changes nothing outside its markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import doc_tables

MiB = 1024 * 1024
MARKERS = doc_tables.Markers("bench-compare")
DOC = Path("docs/performance.md")
NAMES = ("ansible-operator", "warm", "cold")


def _one_task(**overrides: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "latency_s": [2.0, 2.2, 2.4],
        "cpu_per_run_s": 2.0,
        "runs_per_new_cr": 1.0,
        "burst_crs": 50,
        "burst_s": 60.0,
        "burst_cpu_per_run_s": 2.0,
        "burst_machine_busy": 0.95,
        "burst_tree_rss_peak_bytes": 400 * MiB,
        "patches": 20,
        "patches_window_s": 0.9,
        "runs_for_patches": 3,
        "idle_s": 20.0,
        "idle_crs": 61,
        "idle_cpu_percent": 0.0,
        "idle_runs": 0,
        "idle_rss_bytes": 40 * MiB,
        "idle_tree_rss_bytes": 80 * MiB,
        "launcher_idle_s": 120.0,
        "released_after_s": 121.4,
        "released_rss_bytes": 40 * MiB,
        "backlog_crs": 300,
        "backlog_new_cr_s": 300.0,
        "backlog_drained_s": 330.0,
    }
    return figures | overrides


def _figures() -> dict[str, dict[str, dict[str, Any]]]:
    return {
        "one-task": {
            "ansible-operator": _one_task(),
            "warm": _one_task(latency_s=[0.3], cpu_per_run_s=0.5, released_rss_bytes=36 * MiB),
            "cold": _one_task(backlog_crs=299),
        },
        "memcached": {
            "ansible-operator": {"latency_s": [8.0], "cpu_per_run_s": 7.0, "runs_per_new_cr": 3},
            "warm": {
                "latency_s": [2.0],
                "cpu_per_run_s": 1.75,
                "runs_per_new_cr": 2.0,
                "requeued_per_new_cr": 1.0,
            },
            "cold": {"latency_s": [9.0], "cpu_per_run_s": 7.0, "runs_per_new_cr": 2.25},
        },
    }


def _rows(table: str) -> dict[str, list[str]]:
    """The table's rows by their label, each as its cells."""
    rows = {}
    for line in table.splitlines()[2:]:
        label, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        rows[label] = cells
    return rows


@pytest.mark.parametrize(
    ("label", "cells"),
    [
        pytest.param(
            "one-task role: CR → Successful",
            ["2.20 s (2.00-2.40)", "0.30 s", "2.20 s (2.00-2.40)", "0.14", "1.00"],
            id="spread-and-ratio-of-medians",
        ),
        pytest.param(
            "one-task role: CPU-s per reconcile",
            ["2.00", "0.50", "2.00", "0.25", "1.00"],
            id="cpu",
        ),
        pytest.param("50 CRs at once → all Successful", ["60.0 s"] * 3 + ["1.00"] * 2, id="burst"),
        pytest.param(
            "runs for 20 spec patches within ~1 s", ["3", "3", "3", "", ""], id="no-ratio"
        ),
        pytest.param(
            "idle again, once the launchers' idle release (120 s without a run) has passed: "
            "RSS of the runtime",
            ["40 MiB", "36 MiB", "40 MiB", "0.90", "1.00"],
            id="idle-release",
        ),
        pytest.param(
            "restart with 300/299 CRs: a new CR behind the backlog → Successful",
            ["300.0 s"] * 3 + ["1.00"] * 2,
            id="restart-counts-that-differ",
        ),
        pytest.param(
            "Memcached role: runs per new CR (of them `requeue_after`)",
            ["3.00", "2.00 (1.00)", "2.25", "", ""],
            id="memcached-requeued",
        ),
    ],
)
def test_side_by_side_rows(label: str, cells: list[str]) -> None:
    rows = _rows(doc_tables.side_by_side(_figures(), NAMES))
    assert rows.get(label) == cells, f"expected row {label!r} = {cells}, saw {rows}"


def test_side_by_side_says_when_launchers_outlived_the_wait() -> None:
    figures = _figures()
    for name in NAMES:
        figures["one-task"][name]["released_after_s"] = 150.2
    figures["one-task"]["warm"] |= {"released_rss_bytes": 151 * MiB, "released_launchers": 2}
    rows = _rows(doc_tables.side_by_side(figures, NAMES))
    label = (
        "idle again, once the launchers' idle release (120 s without a run) has passed: "
        "RSS of the runtime"
    )
    expected = ["40 MiB", "151 MiB (2 launchers left)", "40 MiB", "3.77", "1.00"]
    assert rows.get(label) == expected, f"expected row {label!r} = {expected}, saw {rows}"


def test_side_by_side_header_names_the_runtimes() -> None:
    header = doc_tables.side_by_side(_figures(), NAMES).splitlines()[0]
    expected = (
        "| scenario | ansible-operator v1.31 | ours, warm | ours, cold"
        " | warm / ansible-operator | cold / ansible-operator |"
    )
    assert header == expected, f"expected {expected!r}, saw {header!r}"


def test_side_by_side_leaves_out_what_was_not_measured() -> None:
    figures = _figures()
    for name in NAMES:
        del figures["one-task"][name]["released_rss_bytes"]  # --no-idle-release
    del figures["memcached"]  # --memcached-latency-runs 0
    labels = list(_rows(doc_tables.side_by_side(figures, NAMES)))
    left = [label for label in labels if "release" in label or label.startswith("Memcached")]
    assert not left, f"expected no idle-release or Memcached rows, saw {left}"


def test_paragraph_says_how_the_figures_were_taken() -> None:
    about = doc_tables.Provenance(
        date="2026-12-06",
        commit="abc1234-dirty",
        load=(1.94, 3.06),
        versions=(("ansible-core", "2.19.4"), ("Python", "3.13.9")),
        command="python -m bench.compare --restart-crs 300",
    )
    expected = (
        "Results from one run on 2026-12-06 at commit `abc1234-dirty`, load average"
        " 1.9-3.1 (1-minute, sampled during the run), ansible-core 2.19.4, Python 3.13.9:"
        " `python -m bench.compare --restart-crs 300`. Ratios are ours divided by"
        " ansible-operator's."
    )
    shown = doc_tables.paragraph(about)
    assert " ".join(shown.split()) == expected, f"expected {expected!r}, saw {shown!r}"
    longest = max(len(line) for line in shown.splitlines())
    assert longest <= 80, f"expected lines of at most 80 characters, saw {longest}"


def test_replace_marked_keeps_everything_outside() -> None:
    before = "# Doc\n\nhand-written\n\n<!-- bench-compare:begin -->\n"
    after = "<!-- bench-compare:end -->\n\nmore hand-written\n"
    text = f"{before}\nold paragraph\n\n| old | table |\n\n{after}"
    replaced = doc_tables.replace_marked(text, "new\n\n| a |\n", markers=MARKERS, path=DOC)
    assert replaced == f"{before}\nnew\n\n| a |\n\n{after}", f"saw {replaced!r}"
    again = doc_tables.replace_marked(replaced, "new\n\n| a |", markers=MARKERS, path=DOC)
    assert again == replaced, "expected writing the same block twice to change nothing"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("no markers\n", id="none"),
        pytest.param("<!-- bench-compare:begin -->\nonly the start\n", id="no-end"),
        pytest.param("<!-- bench-compare:end -->\n<!-- bench-compare:begin -->\n", id="reversed"),
        pytest.param("<!-- bench-compare:begin -->\n<!-- bench-compare:end -->\n" * 2, id="twice"),
    ],
)
def test_replace_marked_without_markers_names_file_and_markers(text: str) -> None:
    with pytest.raises(doc_tables.MarkersMissingError) as raised:
        doc_tables.replace_marked(text, "table", markers=MARKERS, path=DOC)
    message = str(raised.value)
    for part in (str(DOC), MARKERS.begin, MARKERS.end):
        assert part in message, f"expected the error to name {part!r}, saw {message!r}"


def test_the_doc_has_its_markers() -> None:
    doc = Path(__file__).resolve().parents[2] / DOC
    doc_tables.check(doc, markers=MARKERS)
