"""The ``playbook-operator`` console command: flags → settings → manager.

This module only parses: it defines the commands and their flags and hands what it
parsed, as a mapping, to :mod:`runner.config.builder`, which builds the settings.
Every flag of operator-sdk's ``ansible-operator run`` is accepted, with its
meaning or as a documented no-op, so deployments move over unchanged: its own
flags, controller-runtime's zap logging flags and the ``--config`` manager file.
Booleans accept Go's ``--flag=false`` form; names are never abbreviated (pflag
does not abbreviate either).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import logging
import os
import sys
from collections.abc import Sequence

import runner
from runner.ansible import lines
from runner.base import errors, logs
from runner.config import builder, flags, flagtypes, rundir, sections
from runner.config.settings import Settings
from runner.tools.publish import command as publish_commands
from runner.tools.scaffold import commands as scaffold_commands

log = logging.getLogger("runner.cli")


def _flag(parser: argparse.ArgumentParser, *names: str, **kwargs: object) -> None:
    parser.add_argument(*names, **kwargs)  # type: ignore[arg-type]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="playbook-operator", description=__doc__)
    top.add_argument(
        "--version", action="version", version=f"playbook-operator {runner.__version__}"
    )
    commands = top.add_subparsers(dest="command")
    run = commands.add_parser(
        "run", help="run the operator (watch, reconcile with Ansible)", allow_abbrev=False
    )
    scaffold_commands.add_commands(commands, boolean=flagtypes.boolean)  # init, create api/webhook
    flags.add_run_flags(run)
    preview = commands.add_parser(
        "preview",
        help="show what a CR would change: its role in check mode, writes refused",
        allow_abbrev=False,
    )
    _flag(preview, "cr_file", metavar="CR.yaml", help="the custom resource to preview")
    flags.add_project_flags(preview)
    _flag(
        preview,
        "--namespace",
        "-n",
        default=None,
        help="namespace of a CR whose file names none (default: the kubeconfig's)",
    )
    flags.add_ansible_path_flags(preview)
    _flag(preview, "--output", "-o", choices=["text", "json"], default="text", help="format")
    _rbac_flags(commands)
    _runs_flags(commands)
    publish_commands.add_commands(commands)  # generate crd/csv, scorecard, tool
    commands.add_parser(
        "version",
        help="print the versions: Playbook Operator, Python, ansible-core, ansible-runner, "
        "kubernetes.core",
        allow_abbrev=False,
    )
    return top


def _runs_flags(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``playbook-operator runs`` (runner.tools.runs): a CR's recent runs from its artifacts."""
    runs = commands.add_parser(
        "runs",
        help="a CR's recent runs: trigger, start, duration, result, failed task",
        allow_abbrev=False,
    )
    _flag(runs, "target", metavar="KIND/NAME", help="e.g. memcached/memcached-sample")
    _flag(runs, "--namespace", "-n", default=None, help="the CR's namespace (default: any)")
    _flag(
        runs,
        "--runner-dir",
        default=str(sections.DEFAULT_RUNNER_DIR),
        help="the runner's --runner-dir",
    )
    _flag(runs, "--limit", type=int, default=20, help="newest runs shown (default 20)")
    _flag(runs, "--output", "-o", choices=["text", "json"], default="text", help="format")


def _rbac_flags(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``playbook-operator rbac`` (runner.tools.rbac): least-privilege rules from runs."""
    rbac = commands.add_parser(
        "rbac",
        help="the RBAC rules the operator's runs used: print, check or write role.yaml",
        allow_abbrev=False,
    )
    _flag(rbac, "--from", dest="source", default="", help="/debug/rbac URL or a saved JSON file")
    _flag(rbac, "--token", default="", help="bearer token for --from's URL")
    _flag(rbac, "--token-file", default="", help="file holding the bearer token")
    _flag(rbac, "--ca-file", default="", help="CA bundle for --from's URL")
    _flag(rbac, "--insecure-skip-tls-verify", action="store_true", help="do not verify TLS")
    _flag(
        rbac,
        "--sample",
        dest="samples",
        action="append",
        default=[],
        metavar="CR.yaml",
        help="run the role once for this CR in check mode (repeatable)",
    )
    _flag(rbac, "--role-file", default="config/rbac/role.yaml", help="the role file to compare")
    _flag(rbac, "--write", action="store_true", help="rewrite the role file with the rules")
    _flag(rbac, "--check", action="store_true", help="exit 1 on a denial or a difference")
    _flag(
        rbac,
        "--grant-denied",
        action="store_true",
        help="ask at a terminal, rule by rule, whether to grant requests the API server denied",
    )
    flags.add_project_flags(rbac)
    _flag(rbac, "--namespace", "-n", default=None, help="namespace of samples that name none")
    flags.add_ansible_path_flags(rbac)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; ``args.given`` holds the ``run`` flags given explicitly
    (what a ``--config`` file may not override)."""
    top = parser()
    args = top.parse_args(argv)
    run = next(
        choices["run"]
        for action in top._actions
        if isinstance(choices := getattr(action, "choices", None), dict) and "run" in choices
    )
    known = {name for action in run._actions for name in action.option_strings}
    tokens = sys.argv[1:] if argv is None else list(argv)
    args.given = frozenset(
        token.split("=", 1)[0] for token in tokens if token.split("=", 1)[0] in known
    )
    return args


def build_settings(args: argparse.Namespace, *, environ: dict[str, str]) -> Settings:
    """The settings of ``run`` from what was parsed (:mod:`runner.config.builder`)."""
    given: frozenset[str] = getattr(args, "given", frozenset())
    return builder.build(vars(args), given=given, environ=environ, log=log)


def _version() -> int:
    """``playbook-operator version``, in the form of ``ansible-operator version``; a line past
    its end of life is said on stderr."""
    collections = [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(":") if p]
    found = lines.installed(collections)
    print(f'playbook-operator version: "{runner.__version__}", {found.describe()}')
    warning = lines.end_of_life_warning(found.ansible_core, today=datetime.date.today())
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if getattr(args, "scaffold", None):
        return scaffold_commands.run(args)
    if getattr(args, "publish", None):
        return publish_commands.run(args)
    # The tools are imported late, as the manager below: ``run`` never loads them.
    if args.command == "preview":
        from runner.tools.preview import command as preview_command  # noqa: PLC0415

        return preview_command.main(args, environ=dict(os.environ))
    if args.command == "rbac":
        from runner.tools.rbac import command as rbac_command  # noqa: PLC0415

        return rbac_command.main(args, environ=dict(os.environ))
    if args.command == "runs":
        from runner.tools.runs import command as runs_command  # noqa: PLC0415

        return runs_command.main(args)
    if args.command == "version":
        return _version()
    if args.command != "run":
        parser().print_help()
        return 2
    environ = dict(os.environ)
    logging_section = builder.log_settings(vars(args))
    logs.setup(
        fmt=logging_section.format,
        level=logging_section.level,
        time_encoding=logging_section.time_encoding,
        stacktrace_level=logging_section.stacktrace_level,
    )
    try:
        settings = build_settings(args, environ=environ)
    except errors.ConfigError as exc:
        # Stop before anything is watched; the message names file, entry and field.
        print(f"playbook-operator: invalid configuration: {exc}", file=sys.stderr)
        return 2
    # Late: --version and config errors stay fast.
    from runner.operations import manager  # noqa: PLC0415
    from runner.tools import devloop  # noqa: PLC0415

    try:
        wanted = settings.ansible.runner_dir
        with rundir.claim_runner_dir(wanted) as runner_dir:
            if runner_dir != wanted:
                log.warning(
                    "runner directory in use by another runner process; using a directory "
                    "of its own",
                    extra={"wanted": str(wanted), "using": str(runner_dir)},
                )
            settings = dataclasses.replace(
                settings, ansible=dataclasses.replace(settings.ansible, runner_dir=runner_dir)
            )
            if settings.dev:
                argv_again = sys.argv[1:] if argv is None else list(argv)
                return devloop.run(settings=settings, runtime=manager.Manager, argv=argv_again)
            return manager.Manager(settings).run()
    except errors.ConfigError as exc:
        print(f"playbook-operator: invalid configuration: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
