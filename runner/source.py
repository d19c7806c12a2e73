"""Watch streams: list + watch one kind in one namespace, keep a cache, emit events.

An :class:`Informer` runs in its own thread. It lists (filling its store), then
watches from the list's resourceVersion. It resumes from the last seen
resourceVersion when the stream ends, relists on 410 Gone, and reconnects with
capped exponential backoff while the API server is away. On every relist it
diffs the store against the fresh list and emits the differences — including
deletions that happened while it was disconnected — so no change is lost.

Events go to a handler (the controller's enqueue, after predicates). The store
doubles as a read cache for reconciles.

Errors the API server answers while it gets ready are retried quietly (debug):
a kind whose CRD was just created is first not served (404), then refused with
429 "storage is (re)initializing" for a moment. Only when an error outlasts a
few retries (:data:`QUIET_RETRIES`), or is of another kind, is it a warning.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator

from runner.kube import errors as kube_errors
from runner.kube.client import Client, Query
from runner.kube.types import KubeObject, ObjectKey, Resource, object_key
from runner.predicate import Event, EventType

Handler = Callable[[Event], None]

WATCH_TIMEOUT_SECONDS = 300  # server closes the stream after this; we resume from rv
BACKOFF_START = 0.2
BACKOFF_MAX = 10.0
#: Consecutive transient errors retried at debug level before they are warnings (~6 s).
QUIET_RETRIES = 5
#: Answers that mean "not yet", not "wrong": too many requests / storage initializing,
#: server busy, and (before the first list succeeded) a kind not served yet.
_TRANSIENT = frozenset({429, 503, 504})


class Informer:
    """List+watch of one resource in one namespace (``None``: all namespaces)."""

    def __init__(
        self,
        *,
        client: Client,
        resource: Resource,
        namespace: str | None,
        handler: Handler,
        log: logging.Logger | logging.LoggerAdapter[logging.Logger],
        label_selector: str = "",
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self._handler = handler
        self._log = log
        self._store: dict[ObjectKey, KubeObject] = {}
        self._lock = threading.Lock()
        self._resource_version = ""
        self.synced = threading.Event()

    # -- cache ------------------------------------------------------------

    def get(self, key: ObjectKey) -> KubeObject | None:
        with self._lock:
            return self._store.get(key)

    # -- loop -------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Thread body: list, watch, resume, relist; never raises."""
        delay = BACKOFF_START
        quiet = 0  # consecutive transient errors so far
        while not stop.is_set():
            try:
                if not self._resource_version:
                    self._relist()
                for event in self._watch():
                    if stop.is_set():
                        return
                    quiet = 0
                    self._apply(event)
                delay = BACKOFF_START  # a clean server-side timeout: resume at once
                quiet = 0
            except kube_errors.GoneError:
                self._log.info("watch expired, relisting", extra=self._ident())
                self._resource_version = ""
            except (kube_errors.KubeError, ValueError) as exc:
                quiet = quiet + 1 if self._transient(exc) else QUIET_RETRIES + 1
                level = logging.DEBUG if quiet <= QUIET_RETRIES else logging.WARNING
                self._log.log(
                    level,
                    "watch interrupted, reconnecting",
                    extra={**self._ident(), "error": str(exc), "retry_in": round(delay, 2)},
                )
                stop.wait(delay * (0.5 + random.random()))  # jitter: don't stampede
                delay = min(delay * 2, BACKOFF_MAX)
            except Exception:  # never let the thread die: that would silently stop a watch
                self._log.exception("watch loop error", extra=self._ident())
                stop.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    def _transient(self, exc: Exception) -> bool:
        if not isinstance(exc, kube_errors.ApiError):
            return False
        if exc.status == 404:  # a CRD just created is served a moment later
            return not self.synced.is_set()
        return exc.status in _TRANSIENT

    def _ident(self) -> dict[str, str]:
        return {"resource": self.resource.plural, "namespace": self.namespace or "*"}

    def _query(self) -> Query:
        query: Query = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        return query

    def _relist(self) -> None:
        listing = self.client.request(
            "GET", self.resource.path(namespace=self.namespace), query=self._query()
        )
        api_version = self.resource.gvk.api_version
        fresh: dict[ObjectKey, KubeObject] = {}
        for item in listing.get("items") or []:
            # List items carry no apiVersion/kind; restore them so handlers see whole objects.
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", self.resource.gvk.kind)
            fresh[object_key(item)] = item
        with self._lock:
            old_store, self._store = self._store, fresh
        self._resource_version = str(listing.get("metadata", {}).get("resourceVersion", ""))
        initial = not self.synced.is_set()
        for key, obj in fresh.items():
            previous = old_store.get(key)
            if previous is None:
                self._handler(Event(EventType.ADDED, obj, initial=initial))
            elif _rv(previous) != _rv(obj):
                self._handler(Event(EventType.MODIFIED, obj, old=previous, initial=initial))
        for key, obj in old_store.items():
            if key not in fresh:
                self._handler(Event(EventType.DELETED, obj, initial=initial))
        self.synced.set()

    def _watch(self) -> Iterator[KubeObject]:
        query: Query = {
            **self._query(),
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": WATCH_TIMEOUT_SECONDS,
        }
        path = self.resource.path(namespace=self.namespace)
        # Bookmarks arrive about once a minute; silence well past the server timeout means
        # the connection is dead.
        for line in self.client.stream(path, query=query, read_timeout=WATCH_TIMEOUT_SECONDS + 30):
            kind = line.get("type")
            obj = line.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code", 0))
                raise kube_errors.api_error(status=code or 500, method="WATCH", path=path, body=obj)
            yield {"type": kind, "object": obj}

    def _apply(self, event: KubeObject) -> None:
        kind, obj = event["type"], event["object"]
        rv = _rv(obj)
        if rv:
            self._resource_version = rv
        if kind == "BOOKMARK":
            return
        key = object_key(obj)
        with self._lock:
            previous = self._store.get(key)
            if kind == "DELETED":
                self._store.pop(key, None)
            else:
                self._store[key] = obj
        if kind == "ADDED" and previous is not None:
            kind = "MODIFIED"  # re-sent after a resume: it is an update to what we hold
        self._handler(Event(EventType(kind), obj, old=previous))


def _rv(obj: KubeObject) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
