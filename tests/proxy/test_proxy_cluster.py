"""The per-run proxy against the real API server: tokens, owner injection, cached reads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from runner import proxy
from runner.kube.types import KubeObject
from runner.proxy import ownership
from testkit.helpers import wait_for
from tests.proxy.support import call

pytestmark = pytest.mark.integration


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
