"""The per-run proxy against the real API server: tokens, owner injection, cached reads."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner import ownership, proxy
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, Resource
from tests.helpers import wait_for

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")


@pytest.fixture
def owner(kube: Client, namespace: str) -> KubeObject:
    return kube.create(
        CONFIGMAP, {"metadata": {"name": "owner", "namespace": namespace}}, namespace=namespace
    )


@pytest.fixture
def running_proxy(kube: Client) -> Iterator[tuple[proxy.OwnerProxy, list[Any]]]:
    seen: list[Any] = []
    cached: dict[tuple[str, str], KubeObject] = {}

    def lookup(resource: Resource, namespace: str, name: str) -> KubeObject | None:
        return cached.get((namespace, name))

    server = proxy.OwnerProxy(
        client=kube,
        port=0,
        on_child=lambda owner, resource, child: seen.append((owner, resource.plural, child)),
        cache=lookup,
    )
    server.cached = cached  # type: ignore[attr-defined]
    server.start()
    yield server, seen
    server.shutdown()


def call(
    kubeconfig_path: str, method: str, path: str, body: Any = None, token: str | None = None
) -> tuple[int, dict[str, str], Any]:
    config = yaml.safe_load(Path(kubeconfig_path).read_text())
    server = config["clusters"][0]["cluster"]["server"]
    request = urllib.request.Request(
        server + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            "Authorization": f"Bearer {token or config['users'][0]['user']['token']}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def test_create_through_the_proxy_injects_the_owner(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]], owner: KubeObject, namespace: str
) -> None:
    server, seen = running_proxy
    with server.for_owner(owner) as env:
        code, _, created = call(
            env["KUBECONFIG"],
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "child"}},
        )
    assert code == 201, created
    refs = created["metadata"].get("ownerReferences")
    assert refs == [ownership.Owner.of(owner).reference()], refs
    # Reported just after the answer is sent, from the proxy's handler thread.
    wait_for(
        lambda: [(plural, child["metadata"]["name"]) for _, plural, child in seen],
        until=lambda found: found == [("configmaps", "child")],
        describe="the proxy to report the child it saw created",
        timeout=5,
    )


def test_requests_without_a_live_token_are_refused(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]],
    owner: KubeObject,
    namespace: str,
    tmp_path: Any,
) -> None:
    server, _ = running_proxy
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with server.for_owner(owner) as env:
        kept = tmp_path / "copy.kubeconfig"
        kept.write_text(Path(env["KUBECONFIG"]).read_text())
        code, _, body = call(env["KUBECONFIG"], "GET", path, token="guessed")
        assert code == 401, f"a guessed token got {code}: {body}"
        code, _, body = call(env["KUBECONFIG"], "GET", path)
        assert code == 200, f"the run's own token got {code}: {body}"
        run_file = env["KUBECONFIG"]
    assert not os.path.exists(run_file), "the per-run kubeconfig outlived its run"
    code, _, body = call(str(kept), "GET", path)
    assert code == 401, f"the token of a finished run still works: {code} {body}"


def test_reads_are_served_from_the_cache_when_it_holds_the_object(
    running_proxy: tuple[proxy.OwnerProxy, list[Any]], owner: KubeObject, namespace: str
) -> None:
    server, _ = running_proxy
    fake = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "owner", "namespace": namespace},
        "data": {"from": "cache"},
    }
    server.cached[(namespace, "owner")] = fake  # type: ignore[attr-defined]
    with server.for_owner(owner) as env:
        code, headers, body = call(
            env["KUBECONFIG"], "GET", f"/api/v1/namespaces/{namespace}/configmaps/owner"
        )
        assert code == 200 and headers.get("X-Cache") == "HIT", headers
        assert body["data"] == {"from": "cache"}, body
        code, headers, body = call(
            env["KUBECONFIG"], "GET", f"/api/v1/namespaces/{namespace}/configmaps/missing"
        )
        assert code == 404 and "X-Cache" not in headers, "a miss must go to the API server"
