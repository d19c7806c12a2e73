"""Where the API server is and how to authenticate: kubeconfig or in-cluster.

Only the parts of kubeconfig the runtime needs are supported: server, CA,
client certificates, bearer tokens (inline or file) and
``insecure-skip-tls-verify``. Exec and auth-provider plugins are not.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
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


def _named(items: object, name: str, what: str, path: str) -> dict[str, Any]:
    if items is not None and not isinstance(items, list):
        raise errors.ConfigLoadError(f"{path}: {what}s is not a list")
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            found = item.get(what) or {}
            if not isinstance(found, dict):
                raise errors.ConfigLoadError(f"{path}: {what} {name!r} is not a mapping")
            return dict(found)
    raise errors.ConfigLoadError(f"{path}: {what} {name!r} not found")


def _text(section: dict[str, Any], key: str, path: str) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise errors.ConfigLoadError(f"{path}: {key} is not a string")
    return value


def cache_dir() -> Path:
    """This user's private directory for inline kubeconfig data, in the shared temp dir.

    Anyone may create a name in /tmp first: the directory is used only when it is a real
    directory (no symlink) owned by this user and closed to everyone else, so no other
    user can plant a CA or key there for this one to trust."""
    directory = Path(tempfile.gettempdir()) / f"playbook-operator-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise errors.ConfigLoadError(f"cannot create {directory}: {exc}") from exc
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise errors.ConfigLoadError(
            f"{directory} is not a directory of this user closed to others (mode "
            f"{oct(info.st_mode & 0o777)}, owner {info.st_uid}): refusing to keep kubeconfig "
            "data there; remove it or set TMPDIR"
        )
    return directory


def _materialise(data_b64: str | None, file: str | None, base: Path, suffix: str) -> str | None:
    """Return a file path for inline ``*-data`` or for ``file``.

    Inline data is written once to a private, content-addressed file (in a 0700
    directory of this user), so loading the same kubeconfig again — every module
    run does — reuses it instead of leaving a new temp file behind each time. A file
    found there is used only when its content is the data's (it is rewritten otherwise).
    """
    if data_b64:
        try:
            raw = base64.b64decode(data_b64, validate=True)
        except ValueError as exc:
            raise errors.ConfigLoadError(f"inline {suffix[1:]} data is not base64: {exc}") from exc
        directory = cache_dir()
        target = directory / f"{hashlib.sha256(raw).hexdigest()[:24]}{suffix}"
        if _holds(target, raw):
            return str(target)
        # O_EXCL (mkstemp) then an atomic rename: concurrent loaders never see half a key.
        fd, partial = tempfile.mkstemp(dir=directory, suffix=".part")
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.replace(partial, target)
        return str(target)
    if file:
        return str(base / file) if not os.path.isabs(file) else file
    return None


def _holds(target: Path, raw: bytes) -> bool:
    """True when ``target`` is a regular file (not a link) of this user holding ``raw``."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return False
        return handle.read(len(raw) + 1) == raw


def from_kubeconfig(path: str, *, context: str | None = None) -> ClientConfig:
    """The settings of ``context`` (the current one by default) of the kubeconfig at ``path``;
    anything malformed raises :class:`~runner.kube.errors.ConfigLoadError` naming it."""
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise errors.ConfigLoadError(f"{path}: cannot read kubeconfig: {exc}") from exc
    if not isinstance(doc, dict):
        raise errors.ConfigLoadError(f"{path}: a kubeconfig is a mapping")
    ctx_name = context or doc.get("current-context")
    if not ctx_name or not isinstance(ctx_name, str):
        raise errors.ConfigLoadError(f"{path}: no current-context")
    ctx = _named(doc.get("contexts"), ctx_name, "context", path)
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster", "")), "cluster", path)
    user = (
        _named(doc.get("users"), str(ctx.get("user", "")), "user", path) if ctx.get("user") else {}
    )
    base = Path(path).resolve().parent
    token_file = _text(user, "tokenFile", path)
    return ClientConfig(
        server=(_text(cluster, "server", path) or "").rstrip("/"),
        ca_file=_materialise(
            _text(cluster, "certificate-authority-data", path),
            _text(cluster, "certificate-authority", path),
            base,
            ".crt",
        ),
        cert_file=_materialise(
            _text(user, "client-certificate-data", path),
            _text(user, "client-certificate", path),
            base,
            ".crt",
        ),
        key_file=_materialise(
            _text(user, "client-key-data", path), _text(user, "client-key", path), base, ".key"
        ),
        token=_text(user, "token", path),
        token_file=str(base / token_file) if token_file else None,
        insecure=cluster.get("insecure-skip-tls-verify") is True,
        namespace=_text(ctx, "namespace", path) or "default",
        source=path,
    )
