"""The authoring subcommands of ``playbook-operator``: ``init``, ``create api`` and
``create webhook``.

Outside the runtime flow (watch → queue → reconcile → ansible → status): they write a
project's files and exit; ``runner.cli`` only hands them its subparsers
(:func:`add_commands`) and calls the handler a parsed command line names.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.tools.scaffold import api, project, webhook
from runner.tools.scaffold.errors import ConflictError, ScaffoldError

_PROG = "playbook-operator"


def _init(args: argparse.Namespace) -> int:
    root = Path.cwd()
    project.init(root=root, domain=args.domain, project_name=args.project_name, out=print)
    print(
        "next: playbook-operator create api --group <group> --version v1alpha1 "
        "--kind <Kind> --generate-role; then make run, make test"
    )
    return 0


def _create_api(args: argparse.Namespace) -> int:
    role, playbook = args.generate_role, args.generate_playbook
    if not role and not playbook:
        role = True  # the usual case: a role, as in the project this layout comes from
    api.create(
        root=Path.cwd(),
        group=args.group,
        version=args.version,
        kind=args.kind,
        namespaced=args.namespaced,
        role=role,
        playbook=playbook,
        out=print,
    )
    print("next: make install (the CRD), make run, then apply the sample in config/samples")
    return 0


def _create_webhook(args: argparse.Namespace) -> int:
    webhook.create(
        root=Path.cwd(),
        group=args.group,
        version=args.version,
        kind=args.kind,
        validation=args.programmatic_validation,
        defaulting=args.defaulting,
        out=print,
    )
    print(webhook.next_steps(group=args.group, version=args.version, kind=args.kind))
    return 0


_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "init": _init,
    "create api": _create_api,
    "create webhook": _create_webhook,
}


def run(args: argparse.Namespace) -> int:
    """Run the parsed authoring command; 0 when done or already done, 1 when refused."""
    handler = _HANDLERS[args.scaffold]
    try:
        return handler(args)
    except ConflictError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 0 if exc.unchanged else 1
    except ScaffoldError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    boolean: Callable[[str], bool],
) -> None:
    """Add ``init``, ``create api`` and ``create webhook`` to the command's subparsers."""
    init = commands.add_parser(
        "init",
        help="write a new operator project into the current (empty) directory",
        allow_abbrev=False,
    )
    init.add_argument("--domain", default="my.domain", help="the API groups' domain")
    init.add_argument(
        "--project-name", default=None, help="the project's name (default: the directory's)"
    )
    init.set_defaults(scaffold="init")
    create = commands.add_parser("create", help="add something to the project")
    what = create.add_subparsers(dest="create_what", required=True)
    new_api = what.add_parser(
        "api",
        help="add a kind: CRD, role or playbook, watches.yaml entry, RBAC, sample, test",
        allow_abbrev=False,
    )
    new_api.add_argument(
        "--group", required=True, help="the API group, without the domain (e.g. cache)"
    )
    new_api.add_argument("--version", required=True, help="the API version (e.g. v1alpha1)")
    new_api.add_argument("--kind", required=True, help="the kind, UpperCamelCase (e.g. Memcached)")
    # Go-style booleans, as every flag of `run` takes them (the CLI's parser).
    flag_bool: dict[str, Any] = {"type": boolean, "nargs": "?", "const": True, "metavar": "BOOL"}
    new_api.add_argument(
        "--generate-role",
        default=False,
        **flag_bool,
        help="write roles/<kind>/ (the default when neither generate flag is given)",
    )
    new_api.add_argument(
        "--generate-playbook",
        default=False,
        **flag_bool,
        help="write playbooks/<kind>.yml (running the role when --generate-role is given too)",
    )
    new_api.add_argument(
        "--namespaced",
        default=True,
        **flag_bool,
        help="namespaced kind (default true; --namespaced=false: cluster-scoped)",
    )
    new_api.set_defaults(scaffold="create api")
    new_webhook = what.add_parser(
        "webhook",
        help="add admission webhooks for a kind: roles, watches.yaml keys, config/webhook",
        allow_abbrev=False,
    )
    new_webhook.add_argument(
        "--group", required=True, help="the kind's API group, without the domain"
    )
    new_webhook.add_argument("--version", required=True, help="the kind's API version")
    new_webhook.add_argument("--kind", required=True, help="the kind (it must have an API)")
    new_webhook.add_argument(
        "--programmatic-validation",
        default=False,
        **flag_bool,
        help="a validating webhook: roles/<kind>_validate and watches.yaml validation:",
    )
    new_webhook.add_argument(
        "--defaulting",
        default=False,
        **flag_bool,
        help="a defaulting (mutating) webhook: roles/<kind>_default and watches.yaml mutation:",
    )
    new_webhook.set_defaults(scaffold="create webhook")
