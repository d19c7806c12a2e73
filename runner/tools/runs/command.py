"""The ``runs`` subcommand: flags in, a table (or JSON) of a CR's recent runs out."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from runner.tools.runs import history


def main(args: argparse.Namespace) -> int:
    """0 when runs were found, 1 when none (the message says where it looked)."""
    kind, slash, name = str(args.target).partition("/")
    if not slash or not kind or not name:
        print(f"runs: expected <kind>/<name>, got {args.target!r}", file=sys.stderr)
        return 2
    runner_dir = Path(args.runner_dir)
    found = history.find(runner_dir, kind=kind, name=name, namespace=args.namespace)
    found = found[: max(1, args.limit)]
    if args.output == "json":
        print(json.dumps([dataclasses.asdict(run) for run in found], indent=2))
        return 0 if found else 1
    if not found:
        where = f" in namespace {args.namespace}" if args.namespace is not None else ""
        print(f"no runs of {kind}/{name}{where} under {runner_dir}", file=sys.stderr)
        return 1
    print(render(found))
    return 0


def render(runs: list[history.Run]) -> str:
    """One line per run, newest first: start, duration, result, trigger, failed task."""
    rows: list[tuple[str, ...]] = [("STARTED", "SECONDS", "RESULT", "TRIGGER", "FAILED TASK")]
    several = len({run.namespace for run in runs}) > 1
    if several:
        rows = [("NAMESPACE", *rows[0])]
    for run in runs:
        started = (
            datetime.fromtimestamp(run.started, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if run.started is not None
            else "-"
        )
        seconds = f"{run.seconds:.1f}" if run.seconds is not None else "-"
        row = (started, seconds, run.result, run.trigger or "unknown", run.failed_task or "")
        rows.append((run.namespace, *row) if several else row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
