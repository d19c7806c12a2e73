"""A kind's initial state for an informer: streamed (WatchList), else paged LISTs.

Flow: **watch** → queue → reconcile → ansible → status. An informer's relist reads
every object of its kind. Where the API server offers it (the ``WatchList`` feature,
on by default in the embedded cluster's 1.36), that read is a watch with
``sendInitialEvents=true``: the server sends each current object as an ADDED event,
from its watch cache rather than from etcd, then a BOOKMARK annotated
``k8s.io/initial-events-end: "true"`` whose resourceVersion the informer watches on
from — client-go's ``WatchListClient``. Objects arrive one at a time; no LIST answer
is ever held whole, by the server or here.

A server that refuses the parameters (the feature off: 400/403/422), or a stream that
ends before its end bookmark, falls back to :func:`runner.watch.budget.pages` (LIST
in pages, as before); a :class:`Reader` that fell back once stays on pages.

Both yield the same thing: :class:`runner.kube.decode.Listing` batches of at most
:data:`runner.watch.budget.PAGE` objects, the last one carrying the resourceVersion.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.transport import Query
from runner.kube.types import KubeObject
from runner.watch import budget

#: The annotation of the bookmark that ends the initial events.
END_ANNOTATION = "k8s.io/initial-events-end"
#: How long the server may take to send the initial events (it closes the stream then).
STREAM_TIMEOUT_SECONDS = 300
#: Answers that mean "this server does not stream lists": the parameters refused.
REFUSED = frozenset({400, 403, 405, 422})


class IncompleteStreamError(Exception):
    """The stream ended before the bookmark that ends its initial events."""


class Reader:
    """Reads one informer's initial state; remembers a server that does not stream lists."""

    def __init__(
        self,
        client: Client,
        *,
        log: logging.Logger | logging.LoggerAdapter[logging.Logger],
        stream: bool = True,
    ) -> None:
        self._client = client
        self._log = log
        self.streaming = stream

    def read(self, path: str, *, query: Query) -> Iterator[decode.Listing]:
        """Batches of the kind's current objects; the last carries the resourceVersion."""
        if self.streaming:
            batches = 0
            try:
                for batch in stream(self._client, path, query=query):
                    batches += 1
                    yield batch
                return
            except kube_errors.ApiError as exc:
                if exc.status not in REFUSED:
                    raise
                reason = f"{exc.status}: {exc}"
            except IncompleteStreamError as exc:
                reason = str(exc)
            self.streaming = False
            self._log.info(
                "the API server does not stream lists here; reading them in pages",
                extra={"path": path, "reason": reason[:200]},
            )
            if batches:
                # The caller holds part of a read that never completed: it must start over
                # (an informer relists on Gone), this time in pages.
                raise kube_errors.GoneError(
                    status=410, method="WATCH", path=path, body={"message": reason}
                )
        yield from budget.pages(self._client, path, query=query)


def stream(client: Client, path: str, *, query: Query) -> Iterator[decode.Listing]:
    """The WatchList read of ``path`` (raises :class:`IncompleteStreamError` if it ends early)."""
    watch_query: Query = {
        **query,
        "sendInitialEvents": True,
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": True,
        "timeoutSeconds": STREAM_TIMEOUT_SECONDS,
    }
    items: list[KubeObject] = []
    rejected: list[decode.Rejected] = []
    lines = client.stream(path, query=watch_query, read_timeout=STREAM_TIMEOUT_SECONDS + 30)
    for line in lines:
        if isinstance(line, decode.Rejected):
            rejected.append(line)
            continue
        kind, obj = line.get("type"), line.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code", 0)) or 500
            raise kube_errors.api_error(status=code, method="WATCH", path=path, body=obj)
        if kind == "BOOKMARK":
            if _ends_initial_events(obj):
                metadata = {"resourceVersion": str(_metadata(obj).get("resourceVersion", ""))}
                yield decode.Listing(metadata=metadata, items=items, rejected=rejected)
                return
            continue
        items.append(obj)
        if len(items) >= budget.PAGE:
            yield decode.Listing(metadata={}, items=items, rejected=rejected)
            items, rejected = [], []
    raise IncompleteStreamError("the stream ended before the bookmark that ends its initial events")


def _metadata(obj: KubeObject) -> dict[str, object]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _ends_initial_events(obj: KubeObject) -> bool:
    annotations = _metadata(obj).get("annotations")
    return isinstance(annotations, dict) and annotations.get(END_ANNOTATION) == "true"
