"""A run reads back what it wrote, never the informer's older copy.

The watch event of a run's own write is an echo and triggers nothing; if a read
right after the write were answered from a cache that has not seen it yet, the
role would act on stale data and nothing would ever correct it.
"""

from __future__ import annotations

from typing import Any

import pytest

from runner import proxy
from runner.kube.client import Client
from tests.proxy.conftest import CONFIGMAP
from tests.proxy.support import call

pytestmark = pytest.mark.integration

MERGE = "application/merge-patch+json"


REPLACEMENT = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(("PATCH", {"data": {"v": "2"}}, MERGE, (200, {"v": "2"})), id="patch"),
        pytest.param(
            ("PUT", {**REPLACEMENT, "data": {"v": "2"}}, "application/json", (200, {"v": "2"})),
            id="put",
        ),
        pytest.param(("DELETE", None, "application/json", (404, None)), id="delete"),
    ],
)
def test_a_read_after_a_write_of_the_run_sees_the_write(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    kube: Client,
    namespace: str,
    write: tuple[str, Any, str, tuple[int, Any]],
) -> None:
    method, body, content_type, expected = write
    server, _ = running_proxy
    owner = kube.create(
        CONFIGMAP, {"metadata": {"name": "owner", "namespace": namespace}}, namespace=namespace
    )
    before = kube.create(
        CONFIGMAP,
        {"metadata": {"name": "shared", "namespace": namespace}, "data": {"v": "1"}},
        namespace=namespace,
    )
    # The informer has not seen the run's write yet (nor, for the test, will it).
    server.cached[(namespace, "shared")] = before  # type: ignore[attr-defined]
    path = f"/api/v1/namespaces/{namespace}/configmaps/shared"
    with server.for_owner(owner) as env:
        code, _, written = call(env["KUBECONFIG"], method, path, body, content_type=content_type)
        assert code == 200, f"expected the {method} to succeed, saw {code}: {written}"
        code, headers, read = call(env["KUBECONFIG"], "GET", path)
    seen = (code, (read or {}).get("data") if code == 200 else None)
    assert seen == expected, (
        f"expected the read after the {method} to see {expected}, saw {seen} "
        f"(X-Cache: {headers.get('X-Cache')})"
    )


def test_the_cache_answers_again_once_it_holds_the_written_version(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]], kube: Client, namespace: str
) -> None:
    server, _ = running_proxy
    owner = kube.create(
        CONFIGMAP, {"metadata": {"name": "owner", "namespace": namespace}}, namespace=namespace
    )
    before = kube.create(
        CONFIGMAP,
        {"metadata": {"name": "shared", "namespace": namespace}, "data": {"v": "1"}},
        namespace=namespace,
    )
    server.cached[(namespace, "shared")] = before  # type: ignore[attr-defined]
    path = f"/api/v1/namespaces/{namespace}/configmaps/shared"
    with server.for_owner(owner) as env:
        _, _, written = call(
            env["KUBECONFIG"], "PATCH", path, {"data": {"v": "2"}}, content_type=MERGE
        )
        _, stale_headers, _ = call(env["KUBECONFIG"], "GET", path)
        server.cached[(namespace, "shared")] = written  # type: ignore[attr-defined]
        _, caught_up_headers, read = call(env["KUBECONFIG"], "GET", path)
    seen = (stale_headers.get("X-Cache"), caught_up_headers.get("X-Cache"), read["data"])
    assert seen == (None, "HIT", {"v": "2"}), (
        f"expected the API server while the cache is behind, the cache once it holds the "
        f"written version; saw X-Cache {seen[:2]} and data {seen[2]}"
    )
