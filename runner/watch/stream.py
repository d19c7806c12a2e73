"""One watch of an informer: its events until the server ends it, or until it is silent.

Flow: **watch** → queue → reconcile → ansible → status. :class:`runner.watch.source.Informer`
opens a watch from the resourceVersion it holds and reads it here. The API server ends a
watch after ``timeoutSeconds`` and, with ``allowWatchBookmarks``, sends a bookmark on a quiet
watch about once a minute (kube-apiserver's watch cache: ``defaultBookmarkFrequency``), so a
healthy watch is never silent for long. A watch silent for longer than
:data:`SILENCE_SECONDS` is taken for a dead connection (a half-open TCP connection, a stuck
proxy) and ends as a server-side timeout does, so the informer resumes from its
resourceVersion at once: no relist, no backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping

from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.transport import Query
from runner.kube.types import WatchEvent

#: The server ends a watch after this (``timeoutSeconds``); the informer resumes from its rv.
TIMEOUT_SECONDS = 300
#: Silence (no line at all) after which a watch's connection is taken for dead. 75 s leaves
#: 15 s for a late bookmark, and is how long the watch cache aims to keep events
#: (``eventFreshDuration``), so the resourceVersion resumed from is still served. A server
#: that sends no bookmarks only costs a resume (one request, no relist) per this much quiet.
SILENCE_SECONDS = 75.0


def events(
    client: Client,
    path: str,
    *,
    query: Query,
    silence: float,
    log: logging.Logger | logging.LoggerAdapter[logging.Logger],
    fields: Mapping[str, object],
) -> Iterator[WatchEvent | decode.Rejected]:
    """The events of the watch of ``path`` (``query`` holds its resourceVersion), until the
    server ends it or it stays silent for ``silence`` seconds (then it ends quietly too, with
    an info line carrying ``fields``)."""
    query = {**query, "allowWatchBookmarks": True, "timeoutSeconds": TIMEOUT_SECONDS}
    # The read timeout is the silence bound: it bounds the wait for the answer's head and
    # then for each next chunk, so a connection that died silently is noticed.
    lines = client.stream(path, query=query, read_timeout=silence)
    heard = time.monotonic()  # the request is sent at the first next(), just below
    try:
        for line in lines:
            heard = time.monotonic()
            if isinstance(line, decode.Rejected):
                yield line
                continue
            kind = line.get("type")
            obj = line.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code", 0)) or 500
                raise kube_errors.api_error(status=code, method="WATCH", path=path, body=obj)
            yield {"type": str(kind), "object": obj}
    except kube_errors.TransportError as exc:
        silent = time.monotonic() - heard
        if silent < silence:
            raise  # broke while it was talking: the server may be away, back off
        # Our read timeout (or a peer that gave up on the idle connection): a dead
        # connection, not a server in trouble.
        log.info(
            "watch silent, resuming from its resourceVersion",
            extra={**fields, "silent_seconds": round(silent, 1), "error": str(exc)},
        )
