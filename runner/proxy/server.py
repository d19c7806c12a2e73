"""The per-run proxy's state: run sessions, ownership decisions, the writes runs made.

Part of the Ansible ↔ API stage (see the package docstring). A run's kubeconfig
names this proxy and a token; :class:`OwnerProxy` maps the token to the custom
resource being reconciled, decides what a request may mark as owned, what a
read may take from the caches, and remembers the versions its runs wrote (their
watch events are echoes). The HTTP side of each request is in
:mod:`runner.proxy.handler`.

A run's session also holds what the run wrote — so that its reads of those objects
go to the API server until the cache holds the written version — and the streams
it opened, which end with the run.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs

import yaml

from runner.base import errors
from runner.kube import errors as kube_errors
from runner.kube import paths
from runner.kube.client import MERGE_PATCH, Client
from runner.kube.types import GVK, KubeObject, Resource
from runner.proxy import handler, listener, ownership
from runner.rbac import record as rbac_record
from runner.rbac import rules as rbac_rules

log = logging.getLogger("runner.proxy")

_OWN_WRITES_KEPT = 4096
#: logr's V(2) (``--zap-log-level=2``), where ansible-operator logs its cache decisions.
_V2 = logging.DEBUG - 1
_WRITE_WAIT = 5.0  # seconds an informer waits for an in-flight write's answer
_ADOPT_ATTEMPTS = 5  # follow-up patches tried when others change a just-created object


ChildObserver = Callable[[ownership.Owner, Resource, KubeObject], None]
CacheLookup = Callable[[Resource, str, str], KubeObject | None]
ObjectKey = tuple[GVK, str, str]  # kind, namespace ("" if cluster-scoped), name


@dataclass
class Session:
    """One run, while its token is live: the owner, what it wrote, the streams it holds."""

    owner: ownership.Owner
    # The resourceVersion each object had after this run's last write to it ("": unknown,
    # or deleted). The caches may not have caught up; reads of these go to the API server.
    written: dict[ObjectKey, str] = field(default_factory=dict)
    # One closer per open stream (watch, followed logs, exec...): called when the run ends.
    streams: set[Callable[[], None]] = field(default_factory=set)
    live: bool = True


@dataclass(frozen=True)
class RefusedWrite:
    """A write a read-only proxy answered with 403 instead of forwarding it."""

    method: str
    path: str
    body: bytes | None


class OwnerProxy:
    """A local HTTP proxy to the API server, bound to 127.0.0.1.

    ``port`` 0 (the default) lets the kernel choose: each run's kubeconfig names
    the address. ``cache`` looks objects up in the runner's informers, ``caches``
    tells which kinds they hold, and ``blacklists`` (owner kind → kinds) names kinds
    a watch never serves from a cache.

    ``read_only`` (``playbook-operator preview``): reads pass; every write is answered
    403 and kept in :attr:`refused` — except a write with ``dryRun=All``, which the API
    server validates and answers without persisting anything (kubernetes.core sends
    its writes so in check mode). Exec, attach and port-forward are refused too.
    """

    def __init__(
        self,
        *,
        client: Client,
        port: int = 0,
        inject_owner: bool = True,
        on_child: ChildObserver | None = None,
        cache: CacheLookup | None = None,
        caches: Callable[[GVK], bool] | None = None,
        blacklists: Mapping[GVK, frozenset[GVK]] | None = None,
        read_only: bool = False,
        rbac: rbac_record.Record | None = None,
    ) -> None:
        self.client = client
        self.rbac = rbac  # what each run's requests needed of RBAC, and what was denied
        self.inject_owner = inject_owner
        self.read_only = read_only
        self.refused: list[RefusedWrite] = []
        self.on_child = on_child
        self.cache = cache
        self.caches = caches
        self.blacklists = dict(blacklists or {})
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._writes_done = threading.Condition(self._lock)
        self._in_flight: collections.Counter[ObjectKey] = collections.Counter()
        try:
            self._server = listener.Server(("127.0.0.1", port), handler.handler_for(self))
        except OSError as exc:
            problem = (
                f"port {port} is already in use"
                if exc.errno == errno.EADDRINUSE
                else f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}"
            )
            # A start-up error: one line naming the flag, no traceback.
            raise errors.ConfigError(f"--proxy-port={port}: {problem}") from exc
        self._dir = Path(tempfile.mkdtemp(prefix="playbook-operator-proxy-"))
        os.chmod(self._dir, 0o700)  # per-run kubeconfigs hold live tokens
        self.version: bytes | None = None  # the API server's /version answer, once seen
        # (uid, resourceVersion) of objects our runs wrote: their watch events are echoes
        # of our own changes and must not trigger yet another reconcile.
        self._own_writes: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="proxy", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        log.info("API proxy serving", extra={"address": f"127.0.0.1:{self.port}"})

    def shutdown(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def owner_for(self, token: str) -> ownership.Owner | None:
        session = self.session_for(token)
        return session.owner if session else None

    def session_for(self, token: str) -> Session | None:
        with self._lock:
            return self._sessions.get(token)

    @contextlib.contextmanager
    def for_owner(self, owner_obj: KubeObject) -> Iterator[Mapping[str, str]]:
        """A run's environment: a private kubeconfig naming this proxy and a fresh token."""
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
                {"name": "proxy", "cluster": {"server": f"{self.url}{handler.RUNS}{token}"}}
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
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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

    def wrote(self, session: Session, key: ObjectKey, payload: Any) -> None:
        """Note that ``session`` wrote ``key`` (``payload``: the answer, if it was the object)."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        version = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
        with self._lock:
            session.written[key] = version

    # -- request handling (called from handler threads) --------------------

    def account(
        self, session: Session, *, method: str, path: str, status: int = 0, cached: bool = False
    ) -> None:
        """Note the verb a run's request needed (``cached``: answered from an informer;
        ``status``: the API server's answer, 0 if it never saw the request); a 403 from
        the API server is a denial, named with the run's current task."""
        if self.rbac is None:
            return
        use = rbac_rules.use_of(method, path)
        if use is None:
            return
        owner = session.owner
        source = rbac_rules.CACHE if cached else rbac_rules.RUN
        self.rbac.used(owner.gvk, use, source=source)
        if status == 403:
            self.rbac.denied(owner.gvk, use, run=(owner.gvk, owner.namespace, owner.name))

    def refuse(self, method: str, path: str, body: bytes | None) -> None:
        """Note a write a read-only proxy did not let through."""
        with self._lock:
            self.refused.append(RefusedWrite(method=method, path=path, body=body))

    def resource_of(self, target: paths.Target) -> Resource | None:
        try:
            return self.client.resource_for(
                group=target.group, version=target.version, plural=target.plural
            )
        except kube_errors.KubeError:
            return None

    def rewrite_body(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, body: bytes
    ) -> bytes:
        try:
            child = json.loads(body)
        except ValueError:
            return body  # not JSON (e.g. protobuf): pass through untouched
        if not isinstance(child, dict):
            return body
        namespace = target.namespace or str((child.get("metadata") or {}).get("namespace") or "")
        ownership.inject(
            owner, child, child_namespaced=resource.namespaced, child_namespace=namespace
        )
        return json.dumps(child).encode()

    def keep_owner(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, body: bytes
    ) -> bytes:
        """A replace (PUT) keeps the owner's mark the live object has; it never adds one."""
        try:
            replacement = json.loads(body)
        except ValueError:
            return body
        if not isinstance(replacement, dict) or owner.owns(replacement):
            return body
        path = resource.path(namespace=target.namespace or None, name=target.name)
        try:
            live = self.client.request("GET", path)
        except kube_errors.KubeError:
            return body  # not there (the PUT fails too) or unreadable: add nothing
        if not isinstance(live, dict) or not ownership.keep(owner, replacement, live):
            return body
        return json.dumps(replacement).encode()

    def adopt(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, created: KubeObject
    ) -> KubeObject:
        """Mark an object that a server-side apply of this run just created (answered 201).

        The follow-up merge patch is pinned to the created uid and resourceVersion;
        on a conflict the object is read again and, if it is still the one created
        (same uid), patched again. Returns the object as last seen.
        """
        path = resource.path(namespace=target.namespace or None, name=target.name)
        uid = (created.get("metadata") or {}).get("uid")
        current = created
        problem = "changed by others on every attempt"
        for _ in range(_ADOPT_ATTEMPTS):
            patch = ownership.adoption_patch(
                owner,
                current,
                child_namespaced=resource.namespaced,
                child_namespace=target.namespace,
            )
            if patch is None:
                return current
            try:
                adopted: KubeObject = self.client.request(
                    "PATCH", path, body=patch, content_type=MERGE_PATCH
                )
                return adopted
            except kube_errors.ConflictError:
                pass
            except kube_errors.KubeError as exc:
                problem = str(exc)
                break
            try:
                current = self.client.request("GET", path)
            except kube_errors.NotFoundError:
                return created  # deleted meanwhile: nothing to own
            except kube_errors.KubeError as exc:
                problem = str(exc)
                break
            if (current.get("metadata") or {}).get("uid") != uid:
                return created  # deleted and created again by someone else: not ours
        log.warning(
            "could not add the owner to an object created by server-side apply",
            extra={"path": path, "owner": f"{owner.namespace}/{owner.name}", "error": problem},
        )
        return current

    def cached_read(
        self,
        session: Session,
        target: paths.Target | None,
        resource: Resource | None,
        url: SplitResult,
    ) -> KubeObject | None:
        """A GET answered from the runner's caches, or None (and why, at debug level)."""
        reason = self._uncached(session.owner, target, resource, url)
        if reason is None and target is not None and resource is not None and self.cache:
            found = self.cache(resource, target.namespace, target.name)
            if found is None:
                reason = "cache miss"
            else:
                reason = self._behind(session, (resource.gvk, target.namespace, target.name), found)
                if reason is None:
                    return found
        if log.isEnabledFor(_V2):
            message = "Cache miss" if reason == "cache miss" else "Skipping cache lookup"
            extra = {"resource": handler.request_info(url, target), "reason": reason}
            log.log(_V2, message, extra=extra)
        return None

    def _uncached(
        self,
        owner: ownership.Owner,
        target: paths.Target | None,
        resource: Resource | None,
        url: SplitResult,
    ) -> str | None:
        """Why a GET is not looked up in a cache (None: it is)."""
        if target is None:
            return "not a resource request"
        if target.subresource:
            return f"subresource {target.subresource}"
        if not target.name:
            return "watch" if handler.flag(parse_qs(url.query), "watch") else "list"
        if resource is None:
            return "unknown resource"
        if self.cache is None:
            return "cached reads are off"
        if resource.gvk in self.blacklists.get(owner.gvk, frozenset()):
            return "blacklisted"
        if self.caches is not None and not self.caches(resource.gvk):
            return "kind not cached"
        return None

    def _behind(self, session: Session, key: ObjectKey, found: KubeObject) -> str | None:
        """Why the cache's copy may predate a write of this run (None: it does not).

        Only the written version itself is known to be fresh enough: resource
        versions are opaque, so "newer than" cannot be told.
        """
        version = str((found.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            if key in self._in_flight:
                return "being written"
            if key in session.written and session.written[key] != version:
                return "written by this run"
        return None

    def remember(self, payload: Any) -> None:
        """Note a version of an object our runs wrote (its watch event is an echo)."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        if isinstance(meta, dict) and meta.get("uid"):
            with self._lock:
                self._remember(meta)

    def _remember(self, meta: Mapping[str, Any]) -> None:
        self._own_writes[(str(meta["uid"]), str(meta.get("resourceVersion", "")))] = None
        while len(self._own_writes) > _OWN_WRITES_KEPT:
            self._own_writes.popitem(last=False)

    def begin_write(self, key: ObjectKey) -> None:
        with self._lock:
            self._in_flight[key] += 1

    def end_write(self, key: ObjectKey, payload: Any) -> None:
        """Forget the in-flight write; remember the version it produced."""
        meta = payload.get("metadata") if isinstance(payload, dict) else None
        with self._lock:
            self._in_flight[key] -= 1
            if self._in_flight[key] <= 0:
                del self._in_flight[key]
            if isinstance(meta, dict) and meta.get("uid"):
                self._remember(meta)
            self._writes_done.notify_all()

    def is_own_write(self, obj: KubeObject) -> bool:
        """True if ``obj`` is exactly the version one of our runs wrote.

        The API server may deliver the watch event before the write's response
        reaches us; if a write to this object is in flight, wait for it (briefly).
        """
        meta = obj.get("metadata") or {}
        key = (GVK.of(obj), str(meta.get("namespace") or ""), str(meta.get("name", "")))
        version = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))
        with self._lock:
            self._writes_done.wait_for(lambda: key not in self._in_flight, timeout=_WRITE_WAIT)
            return version in self._own_writes

    def observe(self, owner: ownership.Owner, resource: Resource, payload: Any) -> None:
        if self.on_child is None or not isinstance(payload, dict):
            return
        items = payload.get("items") if "items" in payload else [payload]
        for item in items or []:
            if isinstance(item, dict) and owner.owns(item):
                self.on_child(owner, resource, item)
                return  # one sighting per response is enough to start a watch
