"""Helpers for the proxy's tests: calls through a run's kubeconfig, as a role's client makes."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from runner.kube import errors
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.helpers import wait_for

JSON = "application/json"
POD = GVK("", "v1", "Pod")


def server_and_token(kubeconfig_path: str) -> tuple[str, str]:
    """The proxy's URL (without the credentials it carries for Go clients) and the token."""
    config = yaml.safe_load(Path(kubeconfig_path).read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    return f"{server.scheme}://{server.hostname}:{server.port}", config["users"][0]["user"]["token"]


def call(
    kubeconfig_path: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    content_type: str = JSON,
) -> tuple[int, dict[str, str], Any]:
    """One request through the proxy: (status, headers, decoded JSON answer)."""
    server, run_token = server_and_token(kubeconfig_path)
    request = urllib.request.Request(
        server + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token or run_token}", "Content-Type": content_type},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def running_pod(kube: Client, namespace: str, name: str) -> dict[str, Any]:
    """A pod on kwok's node, once it reports Running (its containers only simulated)."""
    kube.create(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "simulated"}]},
        },
        namespace=namespace,
    )
    return wait_for(
        lambda: kube.get(POD, name=name, namespace=namespace),
        until=lambda pod: (pod.get("status") or {}).get("phase") == "Running",
        describe=f"pod {name} to be Running (kwok)",
        timeout=60,
        ignore=(errors.NotFoundError,),
    )
