"""The control-plane build says what it builds and how far along it is, not go's output.

A cold ``devcluster build`` runs for minutes; go's own output is hundreds of
"go: downloading" lines. These feed :class:`devcluster.progress.GoProgress` go's lines
with a fake clock, and run a failing ``go`` to see its error reported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devcluster import builder, cluster, errors, pins, progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_a_line_every_interval_with_counts_and_share() -> None:
    clock, said = Clock(), list[str]()
    watch = progress.GoProgress(target="k8s", out=said.append, interval=15, clock=clock)
    for number in range(40):
        clock.now += 1
        watch.line(f"go: downloading example.com/m{number} v1.0.0\n", compiling=False)
    watch.start("compiling", total=200)
    for number in range(100):
        clock.now += 0.5
        watch.line(f"example.com/m{number % 40}/pkg{number}\n", compiling=True)
    assert len(said) == (40 + 50) // 15, f"expected a line per 15 s of a 90 s build, saw {said}"
    assert not any("go: downloading" in line for line in said), f"saw {said}"
    assert said[-1] == "k8s: compiling 100/200 packages (50%), 40 modules downloaded, 1m30s", (
        f"saw {said[-1]!r}"
    )
    assert watch.output() == "", "progress lines are not kept as go's output"


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")
def test_a_failing_go_step_reports_what_go_said(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/broken\n\ngo 1.22\n")
    watch = progress.GoProgress(target="broken", out=lambda _: None)
    with pytest.raises(errors.BuildError) as caught:
        builder._go(["build", "-v", "./missing"], cwd=tmp_path, watch=watch, compiling=True)
    assert "missing" in str(caught.value).split("exited", 1)[1], (
        f"expected go's own error after the exit code, saw {caught.value}"
    )


def test_without_a_source_checkout_the_build_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(pins.SOURCE_ENV, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.BuildError, match=r"DEVCLUSTER_SOURCE.*KUBEBUILDER_ASSETS"):
        builder.build(bin_dir=tmp_path / "bin")
    assert cluster.default_data_dir() == tmp_path / ".cluster", "expected the current directory"
    checkout = Path(__file__).resolve().parents[3]
    monkeypatch.setenv(pins.SOURCE_ENV, str(checkout))
    assert pins.repo_root() == checkout, f"expected {checkout}, saw {pins.repo_root()}"
