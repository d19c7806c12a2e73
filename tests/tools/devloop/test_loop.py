"""The dev loop without a cluster: which edits apply, which watches run again, snapshots."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from runner.config import entry as config_entry
from runner.config import sections, watches
from runner.config.settings import Settings
from runner.kube.types import GVK
from runner.tools import devloop
from runner.tools.devloop import loop as loop_mod
from runner.tools.devloop import snapshot, syntax

A = GVK("tests.example.dev", "v1", "Alpha")
B = GVK("tests.example.dev", "v1", "Beta")


def entry(gvk: GVK, role: str, extra: str = "") -> str:
    return f"- version: v1\n  group: {gvk.group}\n  kind: {gvk.kind}\n  role: {role}\n{extra}"


class FakeRunner:
    """Records the hooks the loop calls; takes watches in place unless kinds change."""

    def __init__(self, kinds: set[GVK]) -> None:
        self.kinds = kinds
        self.requeued: list[GVK] = []
        self.replaced: list[list[config_entry.Watch]] = []
        self.restarts = 0

    def requeue(self, gvk: GVK) -> int:
        self.requeued.append(gvk)
        return 1

    def replace_watches(self, loaded: Sequence[config_entry.Watch]) -> bool:
        self.replaced.append(list(loaded))
        return {w.gvk for w in loaded} == self.kinds

    def restart(self) -> None:
        self.restarts += 1


@dataclasses.dataclass
class Project:
    path: Path
    loop: loop_mod.DevLoop
    runner: FakeRunner
    snapshots: snapshot.Snapshots

    def write(self, relative: str, text: str) -> None:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def current(self, relative: str) -> str:
        return (self.snapshots.current / relative).read_text()


def tasks(marker: str) -> str:
    return f"---\n- name: Say {marker}\n  ansible.builtin.debug:\n    msg: {marker}\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    source = tmp_path / "project"
    for role in ("a", "b", "common"):
        (source / "roles" / role / "tasks").mkdir(parents=True)
        (source / "roles" / role / "tasks" / "main.yml").write_text(tasks(role))
    (source / "watches.yaml").write_text(entry(A, "a") + entry(B, "b"))
    monkeypatch.chdir(source)
    base = Settings(
        watches_file=Path("watches.yaml"),
        watches=tuple(watches.load(Path("watches.yaml"), base_dir=source)),
        ansible=sections.AnsibleSettings(
            runner_dir=tmp_path / "runner",
            # make run's habit: the project's roles on ANSIBLE_ROLES_PATH
            roles_path=(str(source / "roles"),),
        ),
    )
    settings, snapshots = devloop.prepare(base)
    runner = FakeRunner({A, B})
    stop = threading.Event()
    loop = loop_mod.DevLoop(
        snapshots=snapshots, settings=settings, target=runner, stop=stop, restart=runner.restart
    )
    yield Project(path=source, loop=loop, runner=runner, snapshots=snapshots)
    stop.set()


def test_runs_read_the_snapshot(project: Project) -> None:
    for watch in project.loop._watches:
        assert watch.role is not None
        assert watch.role.path.is_relative_to(project.snapshots.current), (
            f"expected {watch.gvk.kind}'s role under {project.snapshots.current}, "
            f"saw {watch.role.path}"
        )


@pytest.mark.parametrize(
    ("edited", "expected"),
    [
        pytest.param("roles/a/tasks/main.yml", [A], id="own-role"),
        pytest.param("roles/b/defaults/main.yml", [B], id="new-file-in-role"),
        pytest.param("roles/common/tasks/main.yml", [A, B], id="shared-role"),
        pytest.param("vars/main.yml", [A, B], id="vars-file"),
    ],
)
def test_edit_reconciles_the_watches_that_run_it(
    project: Project, edited: str, expected: list[GVK]
) -> None:
    project.write(edited, tasks("edited"))
    assert project.loop.poll(), "the edit was not applied"
    assert sorted(project.runner.requeued, key=str) == expected, (
        f"expected {expected} reconciled again, saw {project.runner.requeued}"
    )
    assert project.current(edited) == tasks("edited"), "the snapshot does not have the edit"
    assert not project.loop.poll(), "an unchanged project was applied again"


def test_broken_yaml_keeps_the_last_good_snapshot(project: Project) -> None:
    project.write("roles/a/tasks/main.yml", tasks("good"))
    assert project.loop.poll()
    project.runner.requeued.clear()

    project.write("roles/a/tasks/main.yml", "- name: broken\n  debug: msg: oops\n")
    assert not project.loop.poll(), "a broken edit was applied"
    assert project.runner.requeued == [], project.runner.requeued
    assert project.current("roles/a/tasks/main.yml") == tasks("good")
    assert not project.loop.poll(), "the same broken state was looked at again"

    project.write("roles/a/tasks/main.yml", tasks("fixed"))
    assert project.loop.poll(), "the fix was not applied"
    assert project.current("roles/a/tasks/main.yml") == tasks("fixed")


def test_watches_edit_is_taken_in_place(project: Project) -> None:
    project.write("watches.yaml", entry(A, "a", "  vars:\n    x: 1\n") + entry(B, "b"))
    assert project.loop.poll()
    assert len(project.runner.replaced) == 1, project.runner.replaced
    assert dict(project.runner.replaced[0][0].vars) == {"x": 1}
    assert sorted(project.runner.requeued, key=str) == [A, B], project.runner.requeued
    assert project.runner.restarts == 0


def test_watches_edit_adding_a_kind_restarts(project: Project) -> None:
    extra = GVK("tests.example.dev", "v1", "Gamma")
    project.write("watches.yaml", entry(A, "a") + entry(B, "b") + entry(extra, "common"))
    assert project.loop.poll()
    assert project.runner.restarts == 1, "expected a restart for a new kind"


def test_invalid_watches_edit_is_refused(project: Project) -> None:
    project.write("watches.yaml", entry(A, "missing"))
    assert not project.loop.poll(), "an invalid watches.yaml was applied"
    assert project.runner.replaced == [] and project.runner.requeued == []
    assert "role: a" in project.current("watches.yaml")


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        pytest.param("a: 1\nb: c: 2\n", 2, 5, id="mapping-in-scalar"),
        pytest.param("- [unclosed\n", 2, 1, id="unclosed-flow"),
        pytest.param("a: 1\na: 2\n", None, None, id="duplicate-keys-parse"),
        pytest.param("x: !unsafe '{{ y }}'\n", None, None, id="ansible-tag"),
    ],
)
def test_yaml_problems_name_line_and_column(
    tmp_path: Path, text: str, line: int | None, column: int | None
) -> None:
    path = tmp_path / "file.yml"
    path.write_text(text)
    problem = syntax.check(path, shown_as=Path("roles/x/file.yml"))
    if line is None:
        assert problem is None, f"expected no problem, saw {problem}"
        return
    assert problem is not None, "expected a YAML problem"
    assert (problem.line, problem.column) == (line, column), str(problem)
    assert str(problem).startswith(f"roles/x/file.yml:{line}:{column}: "), str(problem)
