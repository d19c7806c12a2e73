"""The proxy's runs, by token: each run's kubeconfig, and the streams it holds open.

Part of the Ansible ↔ API stage (see the package docstring). A run's environment
names a private kubeconfig that points at the proxy with a fresh random token;
while the run lasts, the token maps to its :class:`Session` (the custom resource
it reconciles). When the run ends the token is revoked, the kubeconfig removed,
and every stream the run opened (watches, followed logs, exec...) is cut.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from runner.kube.types import GVK, KubeObject
from runner.proxy import ownership, routing

log = logging.getLogger("runner.proxy")

ObjectKey = tuple[GVK, str, str]  # kind, namespace ("" if cluster-scoped), name
#: A run's kubeconfig: a new file, never an existing one, never through a link.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Session:
    """One run, while its token is live: the owner, what it wrote, the streams it holds."""

    owner: ownership.Owner
    # The resourceVersion each object had after this run's last write to it ("": unknown,
    # or deleted). The caches may not have caught up; reads of these go to the API server.
    # Kept by :class:`runner.proxy.writes.Writes`, under its lock.
    written: dict[ObjectKey, str] = field(default_factory=dict)
    # One closer per open stream (watch, followed logs, exec...): called when the run ends.
    streams: set[Callable[[], None]] = field(default_factory=set)
    live: bool = True


class Sessions:
    """The live runs of one proxy, each behind its token."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        # Per-run kubeconfigs hold live tokens: mkdtemp makes the directory 0700, and each
        # file is created 0600 (never widened and narrowed after), whatever the umask.
        self._dir = Path(tempfile.mkdtemp(prefix="playbook-operator-proxy-"))

    def get(self, token: str) -> Session | None:
        with self._lock:
            return self._sessions.get(token)

    @contextlib.contextmanager
    def open(self, owner_obj: KubeObject, *, server: str) -> Iterator[Mapping[str, str]]:
        """A run's environment: a private kubeconfig naming the proxy (``server``, its
        URL) and a fresh token."""
        owner = ownership.Owner.of(owner_obj)
        token = secrets.token_urlsafe(24)
        path = self._dir / f"{token[:12]}.kubeconfig"
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            # The token twice: in the server's path, for Go clients (kubectl, helm), which
            # send no credentials of a kubeconfig user over plain HTTP; and as the bearer
            # token the Python client sends.
            "clusters": [
                {"name": "proxy", "cluster": {"server": f"{server}{routing.RUNS}{token}"}}
            ],
            "users": [{"name": "run", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "run",
                    "context": {
                        "cluster": "proxy",
                        "user": "run",
                        "namespace": owner.namespace or "default",
                    },
                }
            ],
            "current-context": "run",
        }
        fd = os.open(path, _NEW_FILE, 0o600)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(kubeconfig, handle)
        session = Session(owner=owner)
        with self._lock:
            self._sessions[token] = session
        try:
            yield {"K8S_AUTH_KUBECONFIG": str(path), "KUBECONFIG": str(path)}
        finally:
            with self._lock:
                self._sessions.pop(token, None)
                session.live = False
                streams, session.streams = session.streams, set()
            path.unlink(missing_ok=True)
            for close in streams:  # the run is over: so are the streams it opened
                try:
                    close()
                except Exception:  # a stream must not fail the run it outlived
                    log.exception("could not close a stream of an ended run")

    def hold_stream(self, session: Session, close: Callable[[], None]) -> bool:
        """Register an open stream of ``session``; False if the run already ended."""
        with self._lock:
            if session.live:
                session.streams.add(close)
            return session.live

    def drop_stream(self, session: Session, close: Callable[[], None]) -> None:
        with self._lock:
            session.streams.discard(close)

    def close(self) -> None:
        """Remove the kubeconfigs' directory (the proxy has stopped)."""
        shutil.rmtree(self._dir, ignore_errors=True)
