"""Data safety: the proxy marks what a run creates, and never what it did not create.

Against the real API server: writes of objects that existed before the run (a
replace, merge and strategic-merge patches, a server-side apply) get no owner; a
server-side apply that creates the object gets one, as a create does.
"""

from __future__ import annotations

from typing import Any

import pytest

from runner import proxy
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from runner.proxy import ownership
from tests.proxy.conftest import CONFIGMAP
from tests.proxy.support import call

pytestmark = pytest.mark.integration

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
NAMESPACE = GVK("", "v1", "Namespace")
# The admin created the object with the same fields: the apply takes them over.
FORCED_APPLY = "?fieldManager=role&force=true"


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def refs(obj: KubeObject) -> list[dict[str, Any]]:
    return list((obj.get("metadata") or {}).get("ownerReferences") or [])


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(("PUT", "application/json", "", None), id="replace"),
        pytest.param(("PATCH", MERGE, "", {"data": {"by": "run"}}), id="merge-patch"),
        pytest.param(("PATCH", STRATEGIC, "", {"data": {"by": "run"}}), id="strategic-merge-patch"),
        pytest.param(("PATCH", APPLY, FORCED_APPLY, None), id="server-side-apply"),
    ],
)
def test_writes_to_objects_the_run_did_not_create_add_no_owner(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
    write: tuple[str, str, str, Any],
) -> None:
    method, content_type, query, body = write
    server, _ = running_proxy
    kube.create(CONFIGMAP, configmap("existing", namespace, by="admin"), namespace=namespace)
    path = f"/api/v1/namespaces/{namespace}/configmaps/existing"
    with server.for_owner(owner) as env:
        code, _, answer = call(
            env["KUBECONFIG"],
            method,
            path + query,
            body if body is not None else configmap("existing", namespace, by="run"),
            content_type=content_type,
        )
    assert code == 200, f"expected the {method} to succeed with 200, saw {code}: {answer}"
    assert refs(answer) == [], f"the answer shows an owner on a pre-existing object: {answer}"
    live = kube.get(CONFIGMAP, name="existing", namespace=namespace)
    assert live["data"] == {"by": "run"}, f"the write did not reach the object: {live}"
    assert refs(live) == [], f"a pre-existing object was adopted: {refs(live)}"


def test_server_side_apply_that_creates_gets_the_owner(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    path = f"/api/v1/namespaces/{namespace}/configmaps/applied?fieldManager=role"
    with server.for_owner(owner) as env:
        code, _, answer = call(
            env["KUBECONFIG"],
            "PATCH",
            path,
            configmap("applied", namespace, by="run"),
            content_type=APPLY,
        )
        assert code == 201, f"expected 201 Created, saw {code}: {answer}"
        expected = [ownership.Owner.of(owner).reference()]
        assert refs(answer) == expected, f"the run's answer lacks the owner: {answer}"
        live = kube.get(CONFIGMAP, name="applied", namespace=namespace)
        assert refs(live) == expected, f"the created object has no owner: {live}"
        # Applying again (the role's next run) keeps the owner: it is not the role's field.
        code, _, again = call(
            env["KUBECONFIG"],
            "PATCH",
            path,
            configmap("applied", namespace, by="run", again="yes"),
            content_type=APPLY,
        )
    assert code == 200, f"expected the second apply to answer 200, saw {code}: {again}"
    assert refs(again) == expected, f"a second apply dropped the owner: {again}"


def test_server_side_apply_in_another_namespace_is_marked_by_annotations(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    other = f"{namespace[:50]}-other"
    kube.create(NAMESPACE, {"metadata": {"name": other}})
    try:
        with server.for_owner(owner) as env:
            code, _, answer = call(
                env["KUBECONFIG"],
                "PATCH",
                f"/api/v1/namespaces/{other}/configmaps/remote?fieldManager=role",
                configmap("remote", other),
                content_type=APPLY,
            )
        assert code == 201, f"expected 201 Created, saw {code}: {answer}"
        notes = kube.get(CONFIGMAP, name="remote", namespace=other)["metadata"]["annotations"]
        assert notes == ownership.Owner.of(owner).annotations(), notes
    finally:
        kube.delete(NAMESPACE, name=other)


def test_server_side_apply_dry_run_creates_nothing_and_shows_the_owner(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    with server.for_owner(owner) as env:
        code, _, answer = call(
            env["KUBECONFIG"],
            "PATCH",
            f"/api/v1/namespaces/{namespace}/configmaps/planned?fieldManager=role&dryRun=All",
            configmap("planned", namespace),
            content_type=APPLY,
        )
    assert code == 201, f"expected 201 from the dry run, saw {code}: {answer}"
    assert refs(answer) == [ownership.Owner.of(owner).reference()], answer
    names = [i["metadata"]["name"] for i in kube.list(CONFIGMAP, namespace=namespace)["items"]]
    assert "planned" not in names, f"a dry run created the object: {names}"


def test_replace_keeps_the_owner_of_an_object_the_run_created(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    kube: Client,
    namespace: str,
) -> None:
    server, _ = running_proxy
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    expected = [ownership.Owner.of(owner).reference()]
    with server.for_owner(owner) as env:
        code, _, created = call(
            env["KUBECONFIG"], "POST", collection, configmap("mine", namespace, v="1")
        )
        assert code == 201 and refs(created) == expected, created
        # kubernetes.core's `force: true`: the role's definition, which has no owner.
        code, _, replaced = call(
            env["KUBECONFIG"], "PUT", f"{collection}/mine", configmap("mine", namespace, v="2")
        )
    assert code == 200, f"expected the replace to succeed, saw {code}: {replaced}"
    live = kube.get(CONFIGMAP, name="mine", namespace=namespace)
    assert live["data"] == {"v": "2"} and refs(live) == expected, live
