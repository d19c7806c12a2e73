"""Where the API server is and how to authenticate: kubeconfig or in-cluster.

Only the parts of kubeconfig the runtime needs are supported: server, CA,
client certificates, bearer tokens (inline or file) and
``insecure-skip-tls-verify``. Exec and auth-provider plugins are not.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.kube import errors

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class ClientConfig:
    """Connection settings for one API server. Files are paths on disk."""

    server: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    insecure: bool = False
    namespace: str = "default"
    source: str = ""  # the kubeconfig path or "in-cluster", for messages

    def bearer_token(self) -> str | None:
        # Service-account tokens are rotated on disk; read the file each time.
        if self.token_file:
            return Path(self.token_file).read_text().strip()
        return self.token


def default_kubeconfig_path() -> str | None:
    """The kubeconfig the runtime would use: ``$KUBECONFIG`` (first entry) or ~/.kube/config."""
    env = os.environ.get("KUBECONFIG", "")
    for entry in env.split(os.pathsep):
        if entry and Path(entry).is_file():
            return entry
    home = Path.home() / ".kube" / "config"
    return str(home) if home.is_file() else None


def load(kubeconfig: str | None = None) -> ClientConfig:
    """Load from ``kubeconfig``, else ``$KUBECONFIG``/~/.kube/config, else in-cluster."""
    path = kubeconfig or default_kubeconfig_path()
    if path:
        return from_kubeconfig(path)
    if (SERVICE_ACCOUNT_DIR / "token").is_file() and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    raise errors.ConfigLoadError(
        "no kubeconfig found ($KUBECONFIG, ~/.kube/config) and not running in a cluster"
    )


def in_cluster() -> ClientConfig:
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:
        host = f"[{host}]"
    namespace_file = SERVICE_ACCOUNT_DIR / "namespace"
    return ClientConfig(
        server=f"https://{host}:{port}",
        ca_file=str(SERVICE_ACCOUNT_DIR / "ca.crt"),
        token_file=str(SERVICE_ACCOUNT_DIR / "token"),
        namespace=namespace_file.read_text().strip() if namespace_file.is_file() else "default",
        source="in-cluster",
    )


def _named(items: list[dict[str, Any]], name: str, what: str, path: str) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return dict(item.get(what) or {})
    raise errors.ConfigLoadError(f"{path}: {what} {name!r} not found")


def _materialise(data_b64: str | None, file: str | None, base: Path, suffix: str) -> str | None:
    """Return a file path for inline ``*-data`` or for ``file``.

    Inline data is written once to a private, content-addressed file (in a 0700
    directory of this user), so loading the same kubeconfig again — every module
    run does — reuses it instead of leaving a new temp file behind each time.
    """
    if data_b64:
        raw = base64.b64decode(data_b64)
        directory = Path(tempfile.gettempdir()) / f"playbook-operator-{os.getuid()}"
        directory.mkdir(mode=0o700, exist_ok=True)
        target = directory / f"{hashlib.sha256(raw).hexdigest()[:24]}{suffix}"
        if not target.is_file():
            fd, partial = tempfile.mkstemp(dir=directory, suffix=".part")
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw)
            os.replace(partial, target)  # atomic: concurrent loaders never see half a key
        return str(target)
    if file:
        return str(base / file) if not os.path.isabs(file) else file
    return None


def from_kubeconfig(path: str, *, context: str | None = None) -> ClientConfig:
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise errors.ConfigLoadError(f"{path}: cannot read kubeconfig: {exc}") from exc
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise errors.ConfigLoadError(f"{path}: no current-context")
    ctx = _named(doc.get("contexts", []), ctx_name, "context", path)
    cluster = _named(doc.get("clusters", []), ctx.get("cluster", ""), "cluster", path)
    user = (
        _named(doc.get("users", []), ctx.get("user", ""), "user", path) if ctx.get("user") else {}
    )
    base = Path(path).resolve().parent
    token_file = user.get("tokenFile")
    return ClientConfig(
        server=str(cluster.get("server", "")).rstrip("/"),
        ca_file=_materialise(
            cluster.get("certificate-authority-data"),
            cluster.get("certificate-authority"),
            base,
            ".crt",
        ),
        cert_file=_materialise(
            user.get("client-certificate-data"), user.get("client-certificate"), base, ".crt"
        ),
        key_file=_materialise(user.get("client-key-data"), user.get("client-key"), base, ".key"),
        token=user.get("token"),
        token_file=str(base / token_file) if token_file else None,
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        namespace=ctx.get("namespace") or "default",
        source=path,
    )
