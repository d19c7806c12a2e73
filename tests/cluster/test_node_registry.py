"""The real node's registry (``devcluster.registry``), without a node: what a pull of an
image the node holds and of one it lacks gets back, over HTTP, from a content store of
the test's own (the node's ``ctr`` replaced by a table of image names).

A held image resolves to its manifest's digest and media type and its blobs are served;
a missing one gets ``403`` whose reason phrase, the text containerd puts into the pull
error the kubelet reports, names the image and the command that loads it.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from devcluster import registry

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
LOAD = "make cluster-load IMG=IMAGE"


@dataclass(frozen=True)
class Served:
    port: int
    manifest_digest: str
    layer_digest: str


def _blob(content: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    path = content / "blobs" / "sha256" / digest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"sha256:{digest}"


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    content = tmp_path / "content"
    layer = _blob(content, b"layer bytes")
    manifest = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_TYPE}).encode()
    manifest_digest = _blob(content, manifest)
    images = {"docker.io/library/busybox:latest": (MANIFEST_TYPE, manifest_digest)}
    monkeypatch.setattr(registry.Store, "manifest", lambda self, reference: images.get(reference))
    store = registry.Store(socket=tmp_path / "none.sock", content=content)
    server = ThreadingHTTPServer(("127.0.0.1", 0), registry.handler(store=store, load_command=LOAD))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(server.server_address[1], manifest_digest, layer)
    finally:
        server.shutdown()
        server.server_close()


def request(port: int, method: str, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request(method, path)
    return conn.getresponse()


def test_an_image_the_node_holds_resolves_to_its_manifest(served: Served) -> None:
    reply = request(served.port, "HEAD", "/v2/library/busybox/manifests/latest?ns=docker.io")
    seen = (reply.status, reply.getheader("Docker-Content-Digest"), reply.getheader("Content-Type"))
    assert seen == (200, served.manifest_digest, MANIFEST_TYPE), f"saw {seen}"

    reply = request(served.port, "GET", f"/v2/library/busybox/manifests/{served.manifest_digest}")
    body = reply.read()
    assert reply.status == 200, f"expected the manifest by digest, saw {reply.status}"
    assert json.loads(body)["mediaType"] == MANIFEST_TYPE, f"saw {body!r}"
    assert reply.getheader("Content-Type") == MANIFEST_TYPE

    reply = request(served.port, "GET", f"/v2/library/busybox/blobs/{served.layer_digest}")
    assert (reply.status, reply.read()) == (200, b"layer bytes")


@pytest.mark.parametrize(
    ("path", "reference"),
    [
        pytest.param(
            "/v2/library/busybox/manifests/1.28?ns=docker.io",
            "docker.io/library/busybox:1.28",
            id="docker-hub-tag",
        ),
        pytest.param(
            "/v2/prometheus/memcached-exporter/manifests/v0.14.0?ns=quay.io",
            "quay.io/prometheus/memcached-exporter:v0.14.0",
            id="other-registry",
        ),
        pytest.param(
            "/v2/library/memcached/manifests/sha256:" + "0" * 64,
            "docker.io/library/memcached@sha256:" + "0" * 64,
            id="digest",
        ),
    ],
)
def test_a_missing_image_is_refused_with_the_command_that_loads_it(
    served: Served, path: str, reference: str
) -> None:
    reply = request(served.port, "HEAD", path)
    expected = (
        f"{reference} is not on the real node, and no registry is reachable here: "
        f"load it from podman with `make cluster-load IMG={reference}`"
    )
    # Not 404: containerd reports a 404 as "not found" and drops the reason phrase.
    assert (reply.status, reply.reason) == (403, expected), f"saw {reply.status} {reply.reason!r}"


def test_the_hint_is_one_printable_line() -> None:
    text = registry.hint(reference="docker.io/x/y:1\r\nInjected: yes", load_command=LOAD)
    assert all(" " <= c <= "~" for c in text), f"expected printable ASCII only, saw {text!r}"
