"""A custom resource nested too deep to decode blinds no informer (real runner, embedded cluster).

The Probe CRD keeps unknown fields in ``spec``, so the API server takes a spec
nested 1000 levels; ``json.loads`` does not. The runner watches Probes in all
namespaces (one informer, limited to this test's objects by a label), so before
the fix one such CR stopped every Probe event, and after a restart /readyz
stayed 503. The bad CR is created and read with kubectl (Go decodes it).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from runner.kube import errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from testkit.helpers import unique_name, wait_for
from tests.runner.support import PROBE, StartOperator, probe, probe_watches, wait_condition

NAMESPACE = GVK("", "v1", "Namespace")
LEVELS = 1000
MESSAGE = "the object could not be decoded: nesting"


@dataclass(frozen=True)
class Scene:
    cluster: Any
    namespace: str  # where the deep CR lives
    other: str  # another namespace
    label: dict[str, str]  # on this test's objects: an all-namespaces runner leaves others alone


@pytest.fixture
def scene(kube: Client, cluster: Any, namespace: str) -> Iterator[Scene]:
    other = unique_name("undecodable-other", max_length=40)
    kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    yield Scene(
        cluster=cluster,
        namespace=namespace,
        other=other,
        label={"undecodable-test": secrets.token_hex(4)},
    )
    with contextlib.suppress(errors.NotFoundError):
        kube.delete(NAMESPACE, name=other)


def start(start_operator: StartOperator, label: dict[str, str]) -> OperatorProcess:
    (key, value) = next(iter(label.items()))
    selector = f"  selector:\n    matchLabels:\n      {key}: '{value}'"
    return start_operator(probe_watches(selector), env={"WATCH_NAMESPACE": ""})


def create_deep(cluster: Any, namespace: str, label: dict[str, str]) -> None:
    spec = '{"a":' * LEVELS + '"bottom"' + "}" * LEVELS
    meta = json.dumps({"name": "deep", "namespace": namespace, "labels": label})
    body = f'{{"apiVersion":"{PROBE.api_version}","kind":"Probe","metadata":{meta},"spec":{spec}}}'
    cluster.kubectl("create", "-f", "-", input=body)


def failure_of_deep(cluster: Any, namespace: str) -> dict[str, Any] | None:
    """The deep CR's Failure condition, read with kubectl's JSONPath (no deep JSON here)."""
    out = cluster.kubectl(
        "get", "probes.tests.playbook-operator.dev", "deep", "-n", namespace,
        "-o", "jsonpath={.status.conditions}",
    ).stdout  # fmt: skip
    conditions = json.loads(out) if out.strip() else []
    return next((c for c in conditions if c.get("type") == "Failure"), None)


def wait_failed(operator: OperatorProcess, cluster: Any, namespace: str) -> dict[str, Any]:
    failure = operator.eventually(
        lambda: failure_of_deep(cluster, namespace),
        until=lambda c: bool(c and c.get("status") == "True"),
        describe=f"Failure=True on {namespace}/deep",
        timeout=30,
    )
    assert failure is not None
    assert failure["reason"] == "Failed", failure
    assert failure["message"].startswith(MESSAGE), f"Failure message: {failure['message']!r}"
    depth = re.search(r"nesting (\d+) levels deep", failure["message"])
    assert depth and int(depth.group(1)) > LEVELS, f"depth not named: {failure['message']!r}"
    return failure


def reconciled(kube: Client, operator: OperatorProcess, namespace: str, name: str) -> None:
    wait_condition(
        kube,
        namespace=namespace,
        name=name,
        kind="Successful",
        status="True",
        timeout=30,
        operator=operator,
    )


def skipped_logs(operator: OperatorProcess, namespace: str) -> list[dict[str, Any]]:
    return [
        line
        for line in list(operator.lines)
        if line.get("msg") == "object skipped: it could not be decoded"
        and line.get("level") == "error"
        and line.get("object") == f"{namespace}/deep"
    ]


def test_deep_cr_is_marked_failed_and_the_others_reconcile(
    kube: Client, scene: Scene, start_operator: StartOperator
) -> None:
    namespace, other, label = scene.namespace, scene.other, scene.label
    operator = start(start_operator, label)
    kube.create(PROBE, probe("before", namespace, {"message": "b"}, label), namespace=namespace)
    reconciled(kube, operator, namespace, "before")

    create_deep(scene.cluster, namespace, label)
    kube.create(PROBE, probe("same", namespace, {"message": "s"}, label), namespace=namespace)
    kube.create(PROBE, probe("other", other, {"message": "o"}, label), namespace=other)

    reconciled(kube, operator, namespace, "same")
    reconciled(kube, operator, other, "other")
    wait_failed(operator, scene.cluster, namespace)
    logged = skipped_logs(operator, namespace)
    assert len(logged) == 1, f"expected one error log naming {namespace}/deep, saw {logged}"
    assert logged[0].get("resourceVersion") and logged[0].get("kind") == "Probe", logged[0]


def test_restart_with_a_deep_cr_present_gets_ready(
    kube: Client, scene: Scene, start_operator: StartOperator
) -> None:
    namespace, other, label = scene.namespace, scene.other, scene.label
    create_deep(scene.cluster, namespace, label)
    kube.create(PROBE, probe("old", other, {"message": "o"}, label), namespace=other)

    operator = start(start_operator, label)  # waits for /readyz to answer 200
    reconciled(kube, operator, other, "old")
    wait_failed(operator, scene.cluster, namespace)
    kube.create(PROBE, probe("new", namespace, {"message": "n"}, label), namespace=namespace)
    reconciled(kube, operator, namespace, "new")
    wait_for(operator.ready, describe="/readyz still 200")
