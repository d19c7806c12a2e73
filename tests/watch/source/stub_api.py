"""A stand-in API server for informer tests: one LIST answer, scripted watch streams.

Serves GET on any path: without ``watch=true`` the LIST body; with it, the lines
scripted for the requested resourceVersion, each as one HTTP chunk as the API
server sends them, then holds the stream open until the test ends (as a quiet
watch does), so an informer that is not broken never reconnects. A held stream
says nothing more, as over a connection that died silently, unless
``bookmark_every`` makes it send a BOOKMARK that often, as a quiet watch on the
API server does; ``rewatches`` scripts a second watch from a resourceVersion
already watched (default: the same lines again). A streamed list
(``sendInitialEvents=true``) is refused with 422, as by an API server without the
WatchList feature, so informers read the LIST body; ``initial`` scripts the lines
of a streamed list instead.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from runner.kube import client as client_mod
from runner.kube import config as config_mod
from runner.kube.types import GVK, Resource
from runner.watch.predicate import Event

PROBE = Resource(
    gvk=GVK("tests.playbook-operator.dev", "v1", "Probe"),
    plural="probes",
    namespaced=True,
    verbs=frozenset({"list", "watch", "get"}),
    subresources=frozenset({"status"}),
)


def obj(name: str, rv: str) -> dict[str, Any]:
    """A Probe named ``name`` at resourceVersion ``rv``."""
    return {
        "apiVersion": "tests.playbook-operator.dev/v1",
        "kind": "Probe",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv},
        "spec": {"size": 1},
    }


def line(kind: str, item: dict[str, Any]) -> bytes:
    """One watch event, as a line of a stream."""
    return json.dumps({"type": kind, "object": item}).encode()


def listing(*items: dict[str, Any], rv: str) -> bytes:
    """A LIST answer of ``items`` at resourceVersion ``rv``."""
    body = {"kind": "ProbeList", "metadata": {"resourceVersion": rv}, "items": items}
    return json.dumps(body).encode()


class Seen:
    """An informer's handler that records the names of the objects of its events."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._names.append(str(event.obj["metadata"]["name"]))

    def names(self) -> list[str]:
        with self._lock:
            return list(self._names)


class StubApi:
    def __init__(
        self,
        *,
        list_body: bytes,
        watches: dict[str, list[bytes]],
        initial: list[bytes] | None = None,
        rewatches: dict[str, list[bytes]] | None = None,
        bookmark_every: float | None = None,
    ) -> None:
        self.list_body = list_body
        self.watches = watches
        self.initial = initial
        self.rewatches = rewatches or {}
        self.bookmark_every = bookmark_every
        self.bookmarks_sent = 0  # BOOKMARK lines sent on held streams, every stream together
        self.streamed_lists = 0
        self.lists = 0
        self.watch_versions: list[str] = []  # resourceVersion of each watch request, in order
        self.sent_at: dict[str, float] = {}  # resourceVersion watched → monotonic time all sent
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def client(self) -> client_mod.Client:
        return client_mod.Client(config_mod.ClientConfig(server=self.url), timeout=5.0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                if query.get("watch") != ["true"]:
                    with stub._lock:
                        stub.lists += 1
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(stub.list_body)))
                    self.end_headers()
                    self.wfile.write(stub.list_body)
                    return
                if query.get("sendInitialEvents") == ["true"]:
                    self._initial()
                    return
                rv = query.get("resourceVersion", [""])[0]
                with stub._lock:
                    again = rv in stub.watch_versions
                    stub.watch_versions.append(rv)
                lines = stub.watches.get(rv, [])
                if again:
                    lines = stub.rewatches.get(rv, lines)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for line in lines:
                    self._chunk(line + b"\n")
                stub.sent_at[rv] = time.monotonic()
                self._hold(rv)

            def _hold(self, rv: str) -> None:
                """Keep a watch open until the test ends (at most 30 s), silent or bookmarking."""
                deadline = time.monotonic() + 30
                mark = json.dumps(
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": rv}}}
                ).encode()
                try:
                    while time.monotonic() < deadline:
                        every = stub.bookmark_every
                        if stub._release.wait(
                            deadline - time.monotonic() if every is None else every
                        ):
                            break
                        if every is not None:
                            self._chunk(mark + b"\n")
                            with stub._lock:
                                stub.bookmarks_sent += 1
                    self._chunk(b"")
                except OSError:
                    return  # the client hung up: it took the silence for a dead connection

            def _initial(self) -> None:
                if stub.initial is None:
                    body = b'{"kind":"Status","code":422,"reason":"Invalid"}'
                    self.send_response(422)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                with stub._lock:
                    stub.streamed_lists += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for line in stub.initial:
                    self._chunk(line + b"\n")
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        return Handler

    def __enter__(self) -> StubApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
