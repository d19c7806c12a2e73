"""Writing kubeconfig files: the admin one (client certificate) and service-account ones
(bearer token). Both embed the cluster CA, so clients verify the server's certificate
rather than skipping TLS verification.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def render(
    *,
    server: str,
    ca_pem: bytes,
    user: str,
    token: str | None = None,
    cert_pem: bytes | None = None,
    key_pem: bytes | None = None,
    namespace: str | None = None,
) -> str:
    """One cluster, one user, one context named ``devcluster`` (or ``devcluster-<user>``)."""
    credentials: dict[str, str] = {}
    if token is not None:
        credentials["token"] = token
    if cert_pem is not None and key_pem is not None:
        credentials["client-certificate-data"] = _b64(cert_pem)
        credentials["client-key-data"] = _b64(key_pem)
    context_name = "devcluster" if user == "admin" else f"devcluster-{user}"
    context: dict[str, str] = {"cluster": "devcluster", "user": user}
    if namespace:
        context["namespace"] = namespace
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "devcluster",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": context_name, "context": context}],
        "current-context": context_name,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def write(path: Path, text: str) -> Path:
    """Write ``text`` with mode 0600 (it holds credentials), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    tmp.replace(path)
    return path
