"""``playbook-operator rbac``: from a record of requests to a least-privilege role file.

Input: a running runner's record (``--from https://host:8443/debug/rbac`` with a
bearer token, or a saved JSON file) or sample CRs run once each in preview's
check mode (``--sample``). Output, on standard output: the ClusterRole (or Role,
as the role file is) in kubebuilder's order, then comments naming denials, reads
served only by the informers, and what ``--role-file`` lacks or grants unused.
``--write`` rewrites the role file (its kind and name kept). Exit status: 0; 1
with ``--check`` when a request was denied or the file differs; 2 when the input
cannot be read.
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
from runner.kube import errors as kube_errors
from runner.rbac import rules
from runner.tools.preview import command as preview_command
from runner.tools.rbac import derive, sample

_MAX_RECORD = 16 * 1024 * 1024  # bytes read from --from


class InputError(errors.ConfigError):
    """The record or the role file cannot be read."""


def main(args: argparse.Namespace, *, environ: Mapping[str, str]) -> int:
    logs.setup(fmt=logs.LogFormat.CONSOLE, level=logs.zap_level("error"))
    role_file = Path(args.role_file)
    try:
        snapshot = _snapshot(args, environ=environ)
        role = _read_role(role_file)
    except (errors.PlaybookOperatorError, kube_errors.KubeError) as exc:
        print(f"playbook-operator rbac: {exc}", file=sys.stderr)
        return 2
    found = derive.derive(snapshot)
    diff = derive.compare(found, role) if role is not None else None
    meta = (role or {}).get("metadata") or {}
    text = rules.render(
        found.rules,
        kind=str((role or {}).get("kind") or "ClusterRole"),
        name=str(meta.get("name") or "manager-role"),
        notes=derive.notes(found),
        header=derive.HEADER,
    )
    remarks = derive.remarks(found, diff, role_file=str(role_file))
    sys.stdout.write(text + "".join(f"# {line}\n" for line in remarks))
    if args.write:
        role_file.parent.mkdir(parents=True, exist_ok=True)
        role_file.write_text(text, encoding="utf-8")
        print(f"wrote {role_file}", file=sys.stderr)
        return 1 if args.check and found.denied else 0
    if args.check and (found.denied or (diff is not None and not diff.clean)):
        return 1
    return 0


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


def _read_role(path: Path) -> dict[str, Any] | None:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise InputError(f"{path}: not a Role or ClusterRole")
    return loaded
