"""The publishing subcommands of ``playbook-operator``: ``generate crd``, ``generate csv``,
``scorecard`` and ``tool``.

Outside the runtime flow (watch → queue → reconcile → ansible → status): they write the
manifests an operator is published with (the Makefile's ``manifests`` and ``bundle``
targets run them) and check the bundle. ``runner.cli`` hands them its subparsers
(:func:`add_commands`) and calls :func:`run` when one was parsed; each imports its
module late, so the runtime's start-up never loads them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runner.tools.publish.errors import PublishError

_PROG = "playbook-operator"


def _roles_path() -> tuple[str, ...]:
    return tuple(p for p in os.environ.get("ANSIBLE_ROLES_PATH", "").split(os.pathsep) if p)


def _generate(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if args.what == "crd":
        from runner.tools.publish import crd  # noqa: PLC0415

        crd.generate(
            root, watches_file=root / args.watches_file, roles_path=_roles_path(), out=print
        )
        return 0
    from runner.tools.publish import csv  # noqa: PLC0415

    csv.generate(
        root,
        watches_file=root / args.watches_file,
        roles_path=_roles_path(),
        version=args.version,
        out=print,
    )
    return 0


def _scorecard(args: argparse.Namespace) -> int:
    from runner.tools.publish import scorecard  # noqa: PLC0415

    return scorecard.main(
        bundle=Path(args.bundle), binary=Path(args.scorecard_test), selector=args.selector
    )


def _tool(args: argparse.Namespace) -> int:
    from runner.tools.publish import gotools  # noqa: PLC0415

    path = gotools.ensure(
        args.name, bin_dir=Path(args.bin_dir), out=lambda m: print(m, file=sys.stderr)
    )
    print(path)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the parsed publishing command; 0 when done, 1 when refused."""
    handlers = {"generate": _generate, "scorecard": _scorecard, "tool": _tool}
    try:
        return handlers[args.publish](args)
    except PublishError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``generate``, ``scorecard`` and ``tool`` to the command's subparsers."""
    generate = commands.add_parser("generate", help="write the manifests an operator ships")
    what = generate.add_subparsers(dest="what", required=True)
    crd = what.add_parser(
        "crd",
        help="each watched kind's CRD schema from its role's meta/argument_specs.yml",
        allow_abbrev=False,
    )
    csv = what.add_parser(
        "csv",
        help="the base ClusterServiceVersion in config/manifests/bases (hand edits kept)",
        allow_abbrev=False,
    )
    csv.add_argument("--version", default="0.0.1", help="the operator's version (make VERSION)")
    for parser in (crd, csv):
        parser.add_argument("--dir", default=".", help="the project (default: here)")
        parser.add_argument("--watches-file", default="watches.yaml", help="within --dir")
        parser.set_defaults(publish="generate")
    scorecard = commands.add_parser(
        "scorecard",
        help="run the bundle's scorecard tests with the scorecard-test binary, no cluster",
        allow_abbrev=False,
    )
    scorecard.add_argument("--bundle", default="bundle", help="the bundle directory")
    scorecard.add_argument(
        "--scorecard-test",
        required=True,
        help="the scorecard-test binary (make scorecard builds it)",
    )
    scorecard.add_argument("--selector", default="", help="label selector, e.g. suite=basic")
    scorecard.set_defaults(publish="scorecard")
    tool = commands.add_parser(
        "tool", help="build a pinned Go tool into --bin-dir (once) and print its path"
    )
    tool.add_argument("name", choices=["operator-sdk", "opm", "kustomize", "scorecard-test"])
    tool.add_argument("--bin-dir", default="bin", help="where tools are kept (default bin/)")
    tool.set_defaults(publish="tool")
