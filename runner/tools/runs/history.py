"""A custom resource's past runs, from the artifact directories the runner kept.

Layout (ansible-operator's): ``<runner-dir>/<group>/<version>/<Kind>/<namespace>/<name>/
artifacts/<ident>/``, where an empty group or namespace is no directory at all. A runner
whose ``--runner-dir`` was taken uses ``<runner-dir>-<pid>`` beside it: those are read
too. Runs recorded by this runner carry :data:`runner.queue.trigger.ARTIFACT`; older
ones (or ansible-operator's) are described from ``status``, ``rc``, file times and the
failed job events, with the trigger unknown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.queue import trigger

_FAILED_EVENTS = ("runner_on_failed", "runner_on_unreachable")


@dataclass(frozen=True, slots=True)
class Run:
    """One run, as far as its artifacts tell."""

    namespace: str
    name: str
    ident: str
    trigger: str  # the trigger's description ("spec changed: generation 3"), "" if unknown
    trigger_kind: str  # runner.queue.trigger.Kind's value, "" if unknown
    started: float | None  # seconds since 1970
    seconds: float | None
    result: str  # succeeded, failed, running, or ansible-runner's status
    failed_task: str | None


def find(runner_dir: Path, *, kind: str, name: str, namespace: str | None) -> list[Run]:
    """Runs of the objects of ``kind`` (its name, any case; or ``Kind.group``) called
    ``name`` — in ``namespace``, or in any when None — newest first."""
    kind_name, _, group = kind.partition(".")
    runs: list[Run] = []
    for base in _runner_dirs(runner_dir):
        for object_dir, found_ns in _object_dirs(base, kind=kind_name, group=group, name=name):
            if namespace is not None and found_ns != namespace:
                continue
            artifacts = object_dir / "artifacts"
            if not artifacts.is_dir():
                continue
            for run_dir in artifacts.iterdir():
                if run_dir.is_dir() and not run_dir.is_symlink():
                    runs.append(_read(run_dir, namespace=found_ns, name=name))
    runs.sort(key=lambda run: run.started or 0.0, reverse=True)
    return runs


def _runner_dirs(runner_dir: Path) -> Iterator[Path]:
    if runner_dir.is_dir():
        yield runner_dir
    parent = runner_dir.parent
    if parent.is_dir():
        for sibling in sorted(parent.glob(f"{runner_dir.name}-*")):
            if sibling.name[len(runner_dir.name) + 1 :].isdigit() and sibling.is_dir():
                yield sibling


def _object_dirs(base: Path, *, kind: str, group: str, name: str) -> Iterator[tuple[Path, str]]:
    """(the object's dir, its namespace) for every group/version holding ``kind``."""
    patterns = ("*/*/*/*", "*/*/*", "*/*")  # group/version/Kind[/ns], or version/Kind[/ns]
    seen: set[Path] = set()
    for pattern in patterns:
        for kind_dir in base.glob(pattern):
            if kind_dir in seen or kind_dir.name.lower() != kind.lower():
                continue
            parts = kind_dir.relative_to(base).parts
            if len(parts) == 3 and group and parts[0] != group:
                continue
            if len(parts) < 2 or len(parts) > 3 or not kind_dir.is_dir():
                continue
            seen.add(kind_dir)
            if (kind_dir / name / "artifacts").is_dir():
                yield kind_dir / name, ""  # cluster-scoped
            for ns_dir in kind_dir.iterdir():
                if (ns_dir / name / "artifacts").is_dir():
                    yield ns_dir / name, ns_dir.name


def _read(run_dir: Path, *, namespace: str, name: str) -> Run:
    record = trigger.load(run_dir)
    if record is not None:
        why = record.get("trigger") or {}
        described = ""
        kind = str(why.get("kind") or "")
        if kind in trigger.Kind.__members__.values():
            described = trigger.Trigger(
                trigger.Kind(kind), str(why.get("detail") or ""), int(why.get("folded") or 0)
            ).describe()
        return Run(
            namespace=namespace,
            name=name,
            ident=run_dir.name,
            trigger=described,
            trigger_kind=kind,
            started=_number(record.get("started")),
            seconds=_number(record.get("seconds")),
            result=str(record.get("result") or ""),
            failed_task=record.get("failed_task") or None,
        )
    status = _text(run_dir / "status")
    started = run_dir.stat().st_mtime if not (run_dir / "job_events").is_dir() else None
    try:
        started = (run_dir / "job_events").stat().st_ctime if started is None else started
        ended = max(p.stat().st_mtime for p in run_dir.iterdir())
    except (OSError, ValueError):
        ended = None
    seconds = ended - started if ended is not None and started is not None and status else None
    return Run(
        namespace=namespace,
        name=name,
        ident=run_dir.name,
        trigger="",
        trigger_kind="",
        started=started,
        seconds=seconds,
        result=("succeeded" if status == "successful" else status or "running"),
        failed_task=_failed_task(run_dir) if status and status != "successful" else None,
    )


def _failed_task(run_dir: Path) -> str | None:
    """The first failed, not ignored task's name in the run's job events."""
    events = run_dir / "job_events"
    if not events.is_dir():
        return None
    for path in sorted(events.glob("*.json"), key=lambda p: _counter(p.name)):
        try:
            event = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        data = event.get("event_data") or {}
        if event.get("event") in _FAILED_EVENTS and not data.get("ignore_errors"):
            return str(data.get("task") or "") or None
    return None


def _counter(filename: str) -> int:
    head = filename.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
