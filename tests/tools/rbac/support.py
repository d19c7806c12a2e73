"""What ``playbook-operator rbac``'s tests share: a record, API discovery from a fixture,
one run of the command in-process, and the role file it wrote, by document."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner import cli
from runner.kube import errors as kube_errors
from runner.tools.rbac import command

FIXTURES = Path(__file__).parent / "fixtures"
PROBE_GROUP = "tests.playbook-operator.dev"

Entry = dict[str, Any]
Grant = tuple[str, str, str]  # group, resource, verb
Scope = tuple[str, str]  # kind, namespace ("" for the ClusterRole or a Role naming none)


def use(group: str, resource: str, verb: str, namespace: str = "", source: str = "run") -> Entry:
    """A use as ``GET /debug/rbac`` lists it."""
    return {
        "group": group,
        "resource": resource,
        "verb": verb,
        "namespace": namespace,
        "source": source,
    }


def denial(group: str, resource: str, verb: str, namespace: str = "", task: str = "") -> Entry:
    """A request the API server answered 403, as ``GET /debug/rbac`` lists it."""
    entry = use(group, resource, verb, namespace)
    del entry["source"]
    return {**entry, "task": task, "count": 1}


def record(
    *, uses: Iterable[Entry] = (), denied: Iterable[Entry] = (), kind: str = "Probe"
) -> dict[str, Any]:
    """A record of one watch, the Probe's (or ``kind``'s)."""
    watch = {"group": PROBE_GROUP, "version": "v1", "kind": kind}
    return {"watches": [{**watch, "uses": list(uses), "denied": list(denied), "dropped": 0}]}


def discovery(path: str = "discovery.json") -> Callable[[str], Any]:
    """GETs answered from a trimmed copy of the embedded cluster's discovery: core
    (configmaps, events, namespaces, pods with exec and log, secrets, services), apps
    (deployments), coordination.k8s.io (leases) and the Probe's group."""
    documents = json.loads((FIXTURES / path).read_text(encoding="utf-8"))

    def fetch(url: str) -> Any:
        if url not in documents:
            raise kube_errors.NotFoundError(status=404, method="GET", path=url, body={})
        return documents[url]

    return fetch


@dataclass(frozen=True)
class Outcome:
    """What one run of the command printed, returned and left in the role file."""

    code: int
    out: str
    err: str
    role_file: Path

    def written(self) -> dict[Scope, set[Grant]]:
        """The role file's grants by document."""
        return scoped(yaml.safe_load_all(self.role_file.read_text(encoding="utf-8")))

    def printed(self) -> dict[Scope, set[Grant]]:
        """The printed documents' grants by document."""
        return scoped(yaml.safe_load_all(self.out))

    def remarks(self) -> list[str]:
        return [line for line in self.out.splitlines() if line.startswith("# ")]


def scoped(documents: Iterable[Any]) -> dict[Scope, set[Grant]]:
    found: dict[Scope, set[Grant]] = {}
    for doc in documents:
        if not doc:
            continue
        key = (str(doc["kind"]), str(doc["metadata"].get("namespace") or ""))
        grants = found.setdefault(key, set())
        for rule in doc.get("rules") or []:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    grants.update((group, resource, verb) for verb in rule["verbs"])
    return found


def parse(tmp_path: Path, *, flags: Sequence[str], grant_denied: bool) -> argparse.Namespace:
    """The command line as ``playbook-operator`` parses it (``--from``, ``--role-file``
    in ``tmp_path``), with ``--grant-denied`` set whether or not cli.py knows it yet."""
    args = cli.parse(
        [
            "rbac",
            "--from",
            str(tmp_path / "record.json"),
            "--role-file",
            str(tmp_path / "role.yaml"),
            *flags,
        ]
    )
    args.grant_denied = grant_denied
    return args


def run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    snapshot: dict[str, Any],
    role: str | None = None,
    flags: Sequence[str] = ("--write",),
    grant_denied: bool = False,
    terminal: Any = None,
    fetch: Callable[[str], Any] | None = None,
) -> Outcome:
    """``playbook-operator rbac --from record.json --role-file role.yaml [flags]``, with
    API discovery from the fixture (or ``fetch``) and answers from ``terminal``."""
    (tmp_path / "record.json").write_text(json.dumps(snapshot), encoding="utf-8")
    if role is not None:
        (tmp_path / "role.yaml").write_text(role, encoding="utf-8")
    args = parse(tmp_path, flags=flags, grant_denied=grant_denied)
    code = command.main(
        args,
        environ={},
        discovery=fetch if fetch is not None else discovery(),
        terminal=terminal,
    )
    captured = capsys.readouterr()
    return Outcome(code=code, out=captured.out, err=captured.err, role_file=tmp_path / "role.yaml")


CLUSTER_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules: []
"""
