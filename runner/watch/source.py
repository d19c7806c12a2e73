"""Watch streams: list + watch one kind in one namespace, keep a cache, emit events.

An :class:`Informer` runs in its own thread. It lists (filling its store), then
watches from the list's resourceVersion. It resumes from the last seen
resourceVersion when the stream ends, relists on 410 Gone, and reconnects with
capped exponential backoff while the API server is away. A watch silent for
longer than :data:`stream.SILENCE_SECONDS` (no event, no bookmark) is taken for a
dead connection and resumed the same way, at once. On every relist it
diffs the store against the fresh list and emits the differences — including
deletions that happened while it was disconnected — so no change is lost.

Events go to a handler (the controller's enqueue, after predicates). The store
(:mod:`runner.watch.store`) doubles as a read cache for reconciles. A
``transform`` (dependent informers': :mod:`runner.watch.budget`) trims each
object before it is stored and handled, or keeps it out of the store; what is
stored shares its repeated strings (:mod:`runner.watch.strings`); a relist is
streamed where the API server offers it (WatchList), else read in pages
(:mod:`runner.watch.initial`). Once synced, an informer logs
what it holds ("informer synced": objects, approximate bytes).

One object never blinds an informer. An object that cannot be decoded (nested
deeper than ``json.loads`` goes, see :mod:`runner.kube.decode`), or that decoded
but nests deeper than an informer holds (:data:`runner.watch.strings.MAX_DEPTH`)
— in a LIST or a watch event — is skipped with one error log naming it and its
depth; the resourceVersion still advances, the other objects still flow, the
list still syncs, and ``on_rejected`` (the manager's hook that marks a primary CR failed) hears of
it. A handler that raises on one event is logged with the object named and the
stream goes on. How each is skipped and logged: :mod:`runner.watch.skips`.

Errors the API server answers while it gets ready are retried quietly (debug):
a kind whose CRD was just created is first not served (404), then refused with
429 "storage is (re)initializing" for a moment. Only when an error outlasts a
few retries (:data:`QUIET_RETRIES`), or is of another kind, is it a warning.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator

from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.transport import Query
from runner.kube.types import KubeObject, ObjectKey, Resource, WatchEvent, object_key
from runner.watch import budget, initial, skips, store, stream, strings
from runner.watch.predicate import Event, EventType

Handler = Callable[[Event], None]

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
        on_rejected: skips.OnRejected | None = None,
        transform: budget.Transform | None = None,
        silence: float = stream.SILENCE_SECONDS,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self._handler = handler
        self._transform = transform
        self._log = log
        self._store = store.Store()
        self._strings = strings.SharedStrings()  # what stored objects share
        self._skips = skips.Skips(
            resource=resource,
            namespace=namespace,
            log=log,
            objects=self._store,
            on_rejected=on_rejected,
        )
        self._initial = initial.Reader(client, log=log)  # WatchList, else LIST pages
        self._silence = silence  # seconds of silence that end a watch (tests shorten it)
        self._resource_version = ""
        self._last_activity = time.monotonic()
        self.synced = threading.Event()

    def last_activity(self) -> float:
        """``time.monotonic()`` of the loop's latest sign of life.

        Touched on every list attempt, every watch event (bookmarks included),
        every end of a watch stream (a silent one's included) and every backoff.
        While the loop is healthy it is never older than the longest quiet watch:
        the API server sends a bookmark about once a minute, and a watch silent
        for :data:`stream.SILENCE_SECONDS` is cut and resumed; a backoff (at most
        ``1.5 *`` :data:`BACKOFF_MAX`) bounds the rest. For a liveness check: an
        age well past :data:`stream.SILENCE_SECONDS` means the thread is stuck
        (:mod:`runner.operations.health` waits twice :data:`stream.TIMEOUT_SECONDS`).
        """
        return self._last_activity

    def _touch(self) -> None:
        self._last_activity = time.monotonic()

    # -- cache ------------------------------------------------------------

    @property
    def streams_lists(self) -> bool:
        """Whether its relists are streamed (WatchList), not read in LIST pages."""
        return self._initial.streaming

    def get(self, key: ObjectKey) -> KubeObject | None:
        return self._store.get(key)

    def held(self) -> budget.Held:
        """What the store holds now (for the log and the metrics)."""
        return budget.measure(self._store.objects())

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
                    self._touch()
                    if stop.is_set():
                        return
                    quiet = 0
                    self._apply(event)
                self._touch()
                delay = BACKOFF_START  # a clean server-side timeout, or silence: resume at once
                quiet = 0
            except kube_errors.GoneError:
                self._touch()
                self._log.info("watch expired, relisting", extra=self._ident())
                self._resource_version = ""
            except (kube_errors.KubeError, ValueError) as exc:
                self._touch()
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
                self._touch()
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
        self._touch()
        api_version = self.resource.gvk.api_version
        fresh: dict[ObjectKey, KubeObject] = {}
        rejected: set[ObjectKey] = set()
        path = self.resource.path(namespace=self.namespace)
        stored = len(self._store)
        for listing in self._initial.read(path, query=self._query()):
            self._touch()
            unheld: list[decode.Rejected] = []  # decoded, but nested deeper than held
            for item in listing.items:
                try:
                    # List items carry no apiVersion/kind; restore them so handlers see them whole.
                    item.setdefault("apiVersion", api_version)
                    item.setdefault("kind", self.resource.gvk.kind)
                    key = object_key(item)
                    kept = self._kept(item, held=max(len(fresh), stored))
                    if kept is not None:
                        fresh[key] = kept
                except strings.TooDeepError as exc:
                    unheld.append(decode.too_deep(item, limit=exc.limit))
                except Exception as exc:  # not an object with metadata: skip it, not the list
                    self._skips.unhandled(item, event="LIST", exc=exc)
            for bad in [*listing.rejected, *unheld]:
                bad_key = self._reject(bad, event="LIST")
                if bad_key is not None:
                    rejected.add(bad_key)
                    fresh.pop(bad_key, None)
        self._skips.keep_only(rejected)
        old_store = self._store.replace(fresh)
        self._resource_version = str(listing.metadata.get("resourceVersion", ""))
        initial = not self.synced.is_set()
        for key, obj in fresh.items():
            previous = old_store.get(key)
            if previous is None:
                self._emit(Event(EventType.ADDED, obj, initial=initial))
            elif _rv(previous) != _rv(obj):
                self._emit(Event(EventType.MODIFIED, obj, old=previous, initial=initial))
        for key, obj in old_store.items():
            # A rejected object still exists: it was not deleted, only became unreadable.
            if key not in fresh and key not in rejected:
                self._emit(Event(EventType.DELETED, obj, initial=initial))
        if initial:
            held = budget.measure(fresh.values())
            fields: dict[str, object] = {"kind": self.resource.gvk.kind}
            fields["group"] = self.resource.gvk.group
            fields |= {"objects": held.objects, "bytes": held.bytes}
            self._log.info("informer synced", extra={**self._ident(), **fields})
        self.synced.set()

    def _kept(self, obj: KubeObject, *, held: int | None = None) -> KubeObject | None:
        """What the store keeps of ``obj`` (None: nothing), as the transform decides,
        its repeated strings shared with the other objects held (:mod:`strings`)."""
        kept = obj if self._transform is None else self._transform(obj)
        if kept is None:
            return None
        return self._strings.compact(kept, held=len(self._store) if held is None else held)

    def _watch(self) -> Iterator[WatchEvent | decode.Rejected]:
        """The events of one watch from the resourceVersion held (:mod:`stream`)."""
        query: Query = {**self._query(), "resourceVersion": self._resource_version}
        path = self.resource.path(namespace=self.namespace)
        fields = {**self._ident(), "resourceVersion": self._resource_version}
        return stream.events(
            self.client, path, query=query, silence=self._silence, log=self._log, fields=fields
        )

    def _apply(self, event: WatchEvent | decode.Rejected) -> None:
        if isinstance(event, decode.Rejected):
            self._reject(event, event=event.type or "WATCH")
            return
        kind, obj = event["type"], event["object"]
        rv = _rv(obj)
        if rv:
            self._resource_version = rv
        if kind == "BOOKMARK":
            return
        try:
            key, kept = object_key(obj), self._kept(obj)
            obj = obj if kept is None else kept  # handlers see what the store holds
            previous = self._store.put(key, None if kind == "DELETED" else kept)
            self._skips.forget(key)  # readable again, or gone
            if kind == "ADDED" and previous is not None:
                kind = "MODIFIED"  # re-sent after a resume: it is an update to what we hold
            event_type = EventType(kind)
        except strings.TooDeepError as exc:  # decoded, but not held: as if it had not
            self._reject(decode.too_deep(obj, limit=exc.limit, type=kind), event=kind)
            return
        except Exception as exc:  # one odd event must not stop the stream at this rv
            self._skips.unhandled(obj, event=str(kind), exc=exc)
            return
        self._emit(Event(event_type, obj, old=previous))

    def _emit(self, event: Event) -> None:
        """Hand one event to the handler; what it raises is logged, never propagated."""
        try:
            self._handler(event)
        except Exception as exc:
            self._skips.unhandled(event.obj, event=event.type.value, exc=exc)

    def _reject(self, rejected: decode.Rejected, *, event: str) -> ObjectKey | None:
        """Skip an object that could not be decoded; return its key if it has one."""
        rv = _rv(rejected.obj)
        if rv and event != "LIST":
            self._resource_version = rv  # move past it: resuming here would re-send it
        key, deleted = self._skips.reject(rejected, event=event)
        if deleted is not None:
            self._emit(Event(EventType.DELETED, deleted))
        return key


def _rv(obj: KubeObject) -> str:
    return str(skips.meta_of(obj).get("resourceVersion", ""))
