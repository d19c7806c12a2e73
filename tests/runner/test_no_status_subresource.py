"""A kind without the status subresource is reconciled and its status written through the
object: the role runs, the CR reaches Successful at its generation, and the runner's own
status writes (which bump that generation) trigger no further run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from tests.runner.support import PROBE, StartOperator, condition

pytestmark = pytest.mark.integration

PLAIN = GVK(PROBE.group, "v1", "PlainProbe")
CONFIGMAP = GVK("", "v1", "ConfigMap")
CRD = Path(__file__).parent / "fixtures" / "plain-crd.yaml"


@pytest.fixture(scope="module")
def plain_crd(cluster: Any) -> GVK:
    cluster.kubectl("apply", "-f", str(CRD))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", f"crd/plainprobes.{PLAIN.group}"
    )
    return PLAIN


def _settled(obj: dict[str, Any]) -> bool:
    cond = condition(obj, "Successful")
    status = obj.get("status") or {}
    return bool(
        cond
        and cond.get("status") == "True"
        and status.get("observedGeneration") == obj["metadata"].get("generation")
    )


def test_a_kind_without_status_subresource_reaches_successful_and_does_not_loop(
    kube: Client, namespace: str, start_operator: StartOperator, plain_crd: GVK
) -> None:
    operator = start_operator(
        f"- version: v1\n  group: {PLAIN.group}\n  kind: PlainProbe\n  role: probe\n"
    )
    body = {
        "apiVersion": PLAIN.api_version,
        "kind": PLAIN.kind,
        "metadata": {"name": "plain", "namespace": namespace},
        "spec": {"message": "first"},
    }
    kube.create(PLAIN, body, namespace=namespace)

    def read() -> dict[str, Any]:
        return kube.get(PLAIN, name="plain", namespace=namespace)

    operator.eventually(read, until=_settled, describe="Successful at the current generation")
    echo = kube.get(CONFIGMAP, name="plain-echo", namespace=namespace)["data"]["message"]
    assert echo == "first", f"expected the role to have run with message 'first', saw {echo!r}"

    kube.patch(PLAIN, name="plain", namespace=namespace, body={"spec": {"message": "second"}})
    operator.eventually(
        lambda: (read(), kube.get(CONFIGMAP, name="plain-echo", namespace=namespace)),
        until=lambda seen: _settled(seen[0]) and seen[1]["data"]["message"] == "second",
        describe="the second spec reconciled and Successful at its generation",
    )
    runs = operator.runs()
    assert runs == 2, f"expected one run per spec change (2); the status writes caused {runs}"
    assert operator.logged(
        "no status subresource: status is written through the object, and each write bumps "
        "its generation (reconciles are not triggered by it)"
    ), "expected the runner to say once that status goes through the object"
