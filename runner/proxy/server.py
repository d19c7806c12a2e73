"""The per-run proxy as the runtime sees it: built from its parts, started, stopped.

Part of the Ansible ↔ API stage (see the package docstring). A run's kubeconfig
names this proxy and a token; :class:`OwnerProxy` wires the parts that serve
it — the run sessions (:mod:`runner.proxy.sessions`), the cache side of reads
(:mod:`runner.proxy.reads`), owner marks (:mod:`runner.proxy.marking`), the
writes runs made (:mod:`runner.proxy.writes`), the account of their requests
(:mod:`runner.proxy.audit`) — and serves each request with
:mod:`runner.proxy.handler` on a bounded listener (:mod:`runner.proxy.acceptor`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
from collections.abc import Callable, Mapping

from runner.base import errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from runner.proxy import acceptor, audit, handler, marking, reads, sessions, upstream
from runner.proxy import writes as writes_mod
from runner.rbac import record as rbac_record

log = logging.getLogger("runner.proxy")


class OwnerProxy:
    """A local HTTP proxy to the API server, bound to 127.0.0.1.

    ``port`` 0 (the default) lets the kernel choose: each run's kubeconfig names
    the address. ``cache`` looks objects up in the runner's informers, ``caches``
    tells which kinds they hold, and ``blacklists`` (owner kind → kinds) names kinds
    a watch never serves from a cache.

    ``read_only`` (``playbook-operator preview``): reads pass; every write is answered
    403 and kept in :attr:`refused` — except a write with ``dryRun=All``, which the API
    server validates and answers without persisting anything (kubernetes.core sends
    its writes so in check mode). Exec, attach, port-forward, ``.../proxy``
    subresources, TokenRequests and non-resource paths but discovery are refused too,
    even as reads or dry runs (:func:`runner.proxy.routing.read_only_refusal`).
    """

    def __init__(
        self,
        *,
        client: Client,
        port: int = 0,
        inject_owner: bool = True,
        on_child: upstream.ChildObserver | None = None,
        cache: reads.CacheLookup | None = None,
        caches: Callable[[GVK], bool] | None = None,
        blacklists: Mapping[GVK, frozenset[GVK]] | None = None,
        read_only: bool = False,
        rbac: rbac_record.Record | None = None,
    ) -> None:
        self.client = client
        self.inject_owner = inject_owner
        self.read_only = read_only
        # Mutable: the manager adds each watch's blacklist as it registers the watch.
        self.blacklists: dict[GVK, frozenset[GVK]] = dict(blacklists or {})
        self._writes = writes_mod.Writes()
        self._audit = audit.Audit(rbac)
        self._sessions = sessions.Sessions()
        self._services = upstream.Services(
            client=client,
            sessions=self._sessions,
            reads=reads.CachedReads(
                cache=cache, caches=caches, blacklists=self.blacklists, own_writes=self._writes
            ),
            writes=self._writes,
            audit=self._audit,
            marks=marking.OwnerMarks(client) if inject_owner else None,
            on_child=on_child,
            read_only=read_only,
        )
        try:
            self._server = acceptor.Server(("127.0.0.1", port), handler.handler_for(self._services))
        except OSError as exc:
            self._sessions.close()
            problem = (
                f"port {port} is already in use"
                if exc.errno == errno.EADDRINUSE
                else f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}"
            )
            # A start-up error: one line naming the flag, no traceback.
            raise errors.ConfigError(f"--proxy-port={port}: {problem}") from exc
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="proxy", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def refused(self) -> list[audit.RefusedWrite]:
        """The writes a read-only proxy answered with 403, in the order refused."""
        return self._audit.refused

    @property
    def version(self) -> bytes | None:
        """The API server's /version answer, once a run asked for it."""
        return self._services.version

    def start(self) -> None:
        self._thread.start()
        log.info("API proxy serving", extra={"address": f"127.0.0.1:{self.port}"})

    def shutdown(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._sessions.close()

    def for_owner(
        self, owner_obj: KubeObject
    ) -> contextlib.AbstractContextManager[Mapping[str, str]]:
        """A run's environment: a private kubeconfig naming this proxy and a fresh token."""
        return self._sessions.open(owner_obj, server=self.url)

    def is_own_write(self, obj: KubeObject) -> bool:
        """True if ``obj`` is exactly the version one of our runs wrote (an echo).

        The API server may deliver the watch event before the write's response
        reaches us; if a write to this object is in flight, wait for it (briefly).
        """
        return self._writes.is_own_write(obj)
