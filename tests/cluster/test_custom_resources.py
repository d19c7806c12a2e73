"""CustomResourceDefinitions work as operators need them: install a CRD, create a custom
resource, and write its status through the status subresource only."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

import pytest

from runner.kube import client, errors
from runner.kube.types import GVK, KubeObject
from testkit.helpers import wait_for

CRD = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")


def crd(group: str) -> KubeObject:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def established(kube: client.Client, name: str) -> bool:
    conditions = kube.get(CRD, name=name).get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture
def widget_gvk(kube: client.Client) -> Iterator[GVK]:
    """A freshly installed Widget CRD in a unique group (CRDs are cluster-scoped)."""
    group = f"t{secrets.token_hex(3)}.example.com"
    name = f"widgets.{group}"
    kube.create(CRD, crd(group))
    wait_for(lambda: established(kube, name), describe=f"CRD {name} Established")
    gvk = GVK(group, "v1alpha1", "Widget")
    # Discovery lags Established by a moment; the client raises NotFound until then.
    wait_for(lambda: kube.resource(gvk), describe=f"{gvk} served", ignore=(errors.NotFoundError,))
    yield gvk
    with contextlib.suppress(errors.NotFoundError):
        kube.delete(CRD, name=name)


def test_custom_resource_can_be_created(
    kube: client.Client, namespace: str, widget_gvk: GVK
) -> None:
    body = {
        "apiVersion": widget_gvk.api_version,
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3},
    }

    kube.create(widget_gvk, body, namespace=namespace)

    seen = kube.get(widget_gvk, name="w1", namespace=namespace)
    assert seen["spec"] == {"size": 3}, f"expected spec {{'size': 3}}, saw {seen['spec']}"


@pytest.mark.parametrize(
    ("subresource", "status_written"),
    [
        pytest.param("status", True, id="status-subresource-writes-status"),
        pytest.param("", False, id="main-resource-ignores-status"),
    ],
)
def test_status_is_written_only_through_subresource(
    kube: client.Client, namespace: str, widget_gvk: GVK, subresource: str, status_written: bool
) -> None:
    kube.create(
        widget_gvk,
        {"apiVersion": widget_gvk.api_version, "kind": "Widget", "metadata": {"name": "w1"}},
        namespace=namespace,
    )

    kube.patch(
        widget_gvk,
        name="w1",
        namespace=namespace,
        body={"status": {"phase": "Ready"}},
        subresource=subresource,
    )

    seen = kube.get(widget_gvk, name="w1", namespace=namespace).get("status")
    expected = {"phase": "Ready"} if status_written else None
    assert seen == expected, f"expected status {expected}, saw {seen}"
