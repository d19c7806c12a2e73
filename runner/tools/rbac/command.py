"""``playbook-operator rbac``: from a record of requests to a least-privilege role file.

Input: a running runner's record (``--from https://host:8443/debug/rbac`` with a
bearer token, or a saved JSON file) or sample CRs run once each in preview's
check mode (``--sample``). Every rule is checked against the cluster's API discovery
(``--kubeconfig``) before it is printed or written. Output, on standard output: the
ClusterRole (or Role, as the role file is) in kubebuilder's order, a Role per
namespace for what was used only there, then comments naming denials (not granted),
entries dropped, reads served only by the informers, and what ``--role-file`` lacks
or grants unused. ``--write`` rewrites the role file (its kind and name kept).
``--grant-denied`` asks at the terminal, rule by rule, whether to grant a denied
request too. Exit status: 0; 1 with ``--check`` when a request was denied or
dropped or the file differs; 2 when the input or API discovery cannot be read, or
``--grant-denied`` has no terminal to ask on.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from runner.base import errors, logs
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube import discovery as kube_discovery
from runner.kube import errors as kube_errors
from runner.rbac import rules as rbac_rules
from runner.tools.preview import command as preview_command
from runner.tools.rbac import catalog, consent, derive, documents, sample

_MAX_RECORD = 16 * 1024 * 1024  # bytes read from --from


class InputError(errors.ConfigError):
    """The record or the role file cannot be read."""


def main(
    args: argparse.Namespace,
    *,
    environ: Mapping[str, str],
    discovery: kube_discovery.Fetch | None = None,
    terminal: consent.Terminal | None = None,
) -> int:
    """The command; ``discovery`` (default: the kubeconfig's API server) and
    ``terminal`` (default: standard input) are where it reads API discovery and the
    author's answers."""
    logs.setup(fmt=logs.LogFormat.CONSOLE, level=logs.zap_level("error"))
    role_file = Path(args.role_file)
    # cli.py's --grant-denied; absent from a parser that does not define it.
    grant_denied = bool(args.grant_denied)
    answers = terminal if terminal is not None else sys.stdin
    try:
        if grant_denied:
            consent.require(answers)  # before anything is read: nothing half done
        snapshot = _snapshot(args, environ=environ)
        on_file = _read_role(role_file)
        found = derive.derive(snapshot)
        served = catalog.read(discovery or _discovery(args), groups=derive.groups(found))
    except (errors.PlaybookOperatorError, kube_errors.KubeError) as exc:
        print(f"playbook-operator rbac: {exc}", file=sys.stderr)
        return 2
    found = derive.screen(found, catalog=served)
    main_doc = on_file.main if on_file is not None else documents.Main()
    if grant_denied:
        found = derive.granting(found, _ask(found, main=main_doc, terminal=answers))
    planned = documents.plan(found.uses, main=main_doc)
    diff = documents.compare(planned, on_file) if on_file is not None else None
    text = documents.render(planned, runtime=found.runtime, header=derive.HEADER)
    remarks = derive.remarks(found, diff, role_file=str(role_file), main=main_doc)
    sys.stdout.write(text + "".join(f"# {line}\n" for line in remarks))
    unsettled = bool(found.refused) or any(d.use not in found.granted for d in found.denied)
    if args.write:
        role_file.parent.mkdir(parents=True, exist_ok=True)
        role_file.write_text(text, encoding="utf-8")
        print(f"wrote {role_file}", file=sys.stderr)
        return 1 if args.check and unsettled else 0
    if args.check and (unsettled or (diff is not None and not diff.clean)):
        return 1
    return 0


def _ask(
    found: derive.Derivation, *, main: documents.Main, terminal: consent.Terminal
) -> list[rbac_rules.Use]:
    """The denied requests the author grants, asked on standard error."""
    return consent.ask(
        derive.grantable(found),
        terminal=terminal,
        out=sys.stderr,
        describe=lambda use: documents.describe(use, main=main),
    )


def _discovery(args: argparse.Namespace) -> kube_discovery.Fetch:
    """GETs of the kubeconfig's API server (``--kubeconfig``, else $KUBECONFIG, ...)."""
    client = client_mod.Client(kube_config.load(args.kubeconfig))
    return lambda path: client.request("GET", path)


def _snapshot(args: argparse.Namespace, *, environ: Mapping[str, str]) -> dict[str, Any]:
    if args.samples:
        return sample.record_samples(
            samples=[Path(p) for p in args.samples],
            settings=preview_command.settings(args, environ=environ),
            namespace=args.namespace,
        )
    if not args.source:
        raise InputError("give --from (a URL or a JSON file) or --sample CR.yaml")
    if args.source.startswith(("https://", "http://")):
        data = _fetch(args)
    else:
        try:
            data = Path(args.source).read_bytes()
        except OSError as exc:
            raise InputError(f"--from {args.source}: {exc.strerror or exc}") from exc
    try:
        loaded = json.loads(data)
    except ValueError as exc:
        raise InputError(f"--from {args.source}: not JSON: {exc}") from exc
    if not isinstance(loaded, dict) or not isinstance(loaded.get("watches"), list):
        raise InputError(f"--from {args.source}: not an RBAC record (no 'watches' list)")
    return loaded


def _fetch(args: argparse.Namespace) -> bytes:
    token = args.token
    if args.token_file:
        token = Path(args.token_file).read_text(encoding="utf-8").strip()
    request = urllib.request.Request(args.source)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context(cafile=args.ca_file or None)
    if args.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            data: bytes = answer.read(_MAX_RECORD + 1)
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(f"--from {args.source}: {exc}") from exc
    if len(data) > _MAX_RECORD:
        raise InputError(f"--from {args.source}: larger than {_MAX_RECORD} bytes")
    return data


def _read_role(path: Path) -> documents.Documents | None:
    try:
        loaded = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    try:
        return documents.read(loaded)
    except documents.RoleFileError as exc:
        raise InputError(f"{path}: {exc}") from exc
