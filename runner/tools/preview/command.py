"""``playbook-operator preview CR.yaml``: from its flags to the report on standard output.

The entry of the preview (see :mod:`runner.tools.preview.session`; the flags are defined
with the other subcommands' in :mod:`runner.cli`): flags → settings →
one check-mode run → the report, as text or JSON. Exit status: 0 when the run
went through, 1 when a task failed (the report says which), 2 for a CR file,
watches.yaml or cluster that cannot be previewed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from runner.base import errors, logs
from runner.config import builder, sections, watches
from runner.config.settings import Settings
from runner.kube import errors as kube_errors
from runner.tools.preview import report, session


def main(args: argparse.Namespace, *, environ: Mapping[str, str]) -> int:
    logs.setup(fmt=logs.LogFormat.CONSOLE, level=logs.zap_level("error"))
    try:
        found = session.preview(
            cr_file=Path(args.cr_file),
            settings=settings(args, environ=environ),
            namespace=args.namespace,
        )
    except (errors.PlaybookOperatorError, kube_errors.KubeError) as exc:
        print(f"playbook-operator preview: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(found.to_json() + "\n" if args.output == "json" else report.render(found))
    return 1 if found.runner_status != "Successful" else 0


def settings(args: argparse.Namespace, *, environ: Mapping[str, str]) -> Settings:
    """The settings of a check-mode run (``preview``, ``rbac --sample``): the watches and
    the Ansible flags; the runs' events are not logged (the report shows them)."""
    roles_path = _paths(args.ansible_roles_path or environ.get("ANSIBLE_ROLES_PATH", ""))
    collections_path = _paths(
        args.ansible_collections_path or environ.get("ANSIBLE_COLLECTIONS_PATH", "")
    )
    loaded = watches.load(
        Path(args.watches_file),
        environ=environ,
        roles_path=roles_path,
        collections_path=collections_path,
        base_dir=Path.cwd(),
    )
    return Settings(
        watches_file=Path(args.watches_file),
        watches=tuple(loaded),
        kubeconfig=args.kubeconfig,
        environ=dict(environ),
        ansible=sections.AnsibleSettings(
            args=args.ansible_args,
            roles_path=roles_path,
            collections_path=collections_path,
            log_events=sections.LogEvents.NOTHING,
            verbosities=builder.verbosities(gvks=(w.gvk for w in loaded), environ=environ),
        ),
    )


def _paths(value: str) -> tuple[str, ...]:
    return tuple(p for p in value.split(":") if p)
