"""The real node's registry: what a pull finds on a machine that reaches no registry.

The node's containerd sends every pull, for any registry, to this server first (the
CRI plugin's mirror for ``*``, see :func:`devcluster.nodeconfig.containerd_config`).
It answers the read-only part of the registry API from containerd's own store:

- an image the node holds already (loaded by ``up`` or ``devcluster load``) resolves to
  the manifest it has, so ``imagePullPolicy: Always``, and the ``:latest`` tag that
  implies it, work as they would against a registry;
- any other image gets ``403`` whose reason phrase names the image and the command that
  loads it. containerd puts that phrase into the pull's error, the kubelet into the
  pod's ``ErrImagePull`` event and its container status message::

    Failed to pull image "busybox:1.28": ... failed to resolve reference
    "docker.io/library/busybox:1.28": pulling from host 127.0.0.1:41523 failed with
    status code [manifests 1.28]: 403 docker.io/library/busybox:1.28 is not on the
    real node, and no registry is reachable here: load it from podman with
    `make cluster-load IMG=docker.io/library/busybox:1.28`

  (a 404 would read only "not found"). containerd then tries the image's own registry,
  which fails on these machines, and reports the first error: this one.

It listens on 127.0.0.1 only and serves nothing the node does not already hold.
``node`` starts and stops it with the node's other processes, as the component
:data:`devcluster.nodeconfig.NODE_REGISTRY` (its command line:
:func:`devcluster.nodeconfig.registry_command`). Standard library only, and imported by
no other module, so ``python -m devcluster.registry`` runs it unimported.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

NAMESPACE = "k8s.io"  # the CRI plugin's containerd namespace
_MANIFEST = re.compile(r"^/v2/(?P<name>.+)/manifests/(?P<ref>[^/]+)$")
_BLOB = re.compile(r"^/v2/(?P<name>.+)/blobs/(?P<digest>sha256:[0-9a-f]{64})$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Store:
    """containerd's image records (through ``ctr``) and its content store (files)."""

    socket: Path
    content: Path  # <containerd root>/io.containerd.content.v1.content

    def blob(self, digest: str) -> Path | None:
        if not _DIGEST.match(digest):
            return None
        path = self.content / "blobs" / "sha256" / digest.removeprefix("sha256:")
        return path if path.is_file() else None

    def manifest(self, reference: str) -> tuple[str, str] | None:
        """``(media type, digest)`` of the image named ``reference``, if the node has it."""
        ctr = shutil.which("ctr") or "ctr"
        done = subprocess.run(
            [
                ctr,
                f"--address={self.socket}",
                f"--namespace={NAMESPACE}",
                "images",
                "ls",
                f"name=={reference}",
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        for line in done.stdout.splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 3 and fields[0] == reference:
                return fields[1], fields[2]
        return None


def hint(*, reference: str, load_command: str) -> str:
    """What a failed pull says (one line of printable ASCII: an HTTP reason phrase)."""
    text = (
        f"{reference} is not on the real node, and no registry is reachable here: "
        f"load it from podman with `{load_command.replace('IMAGE', reference)}`"
    )
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def _media_type(manifest: Path) -> str:
    # Docker's and OCI's manifests and indexes name their own media type (OCI's may not).
    try:
        media = json.loads(manifest.read_bytes()).get("mediaType")
    except (OSError, ValueError, AttributeError):
        media = None
    return str(media) if media else "application/vnd.oci.image.manifest.v1+json"


def _reference(*, registry: str, name: str, ref: str) -> str:
    return f"{registry}/{name}@{ref}" if _DIGEST.match(ref) else f"{registry}/{name}:{ref}"


def handler(*, store: Store, load_command: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "devcluster-node-registry"

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

        def _answer(self, *, body: Path | None, media_type: str, digest: str) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", media_type)
            self.send_header("Docker-Content-Digest", digest)
            self.send_header("Content-Length", str(body.stat().st_size if body else 2))
            self.end_headers()
            if self.command == "GET":
                if body is None:
                    self.wfile.write(b"{}")
                else:
                    with body.open("rb") as source:
                        shutil.copyfileobj(source, self.wfile)

        def _refuse(self, reference: str) -> None:
            message = hint(reference=reference, load_command=load_command)
            sys.stderr.write(f"pull refused: {message}\n")
            self.send_response(HTTPStatus.FORBIDDEN, message)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            # containerd names the registry the image is really from in `ns`.
            registry = urllib.parse.parse_qs(url.query).get("ns", ["docker.io"])[0]
            if url.path in ("/v2", "/v2/"):
                self._answer(body=None, media_type="application/json", digest="")
                return
            manifest = _MANIFEST.match(url.path)
            if manifest:
                reference = _reference(registry=registry, **manifest.groupdict())
                ref = manifest["ref"]
                if _DIGEST.match(ref):
                    blob = store.blob(ref)
                    if blob is not None:
                        self._answer(body=blob, media_type=_media_type(blob), digest=ref)
                        return
                else:
                    found = store.manifest(reference)
                    blob = store.blob(found[1]) if found else None
                    if found and blob is not None:
                        self._answer(body=blob, media_type=found[0], digest=found[1])
                        return
                self._refuse(reference)
                return
            blob_match = _BLOB.match(url.path)
            if blob_match:
                blob = store.blob(blob_match["digest"])
                if blob is not None:
                    self._answer(
                        body=blob,
                        media_type="application/octet-stream",
                        digest=blob_match["digest"],
                    )
                    return
                self._refuse(f"{registry}/{blob_match['name']}@{blob_match['digest']}")
                return
            self.send_error(HTTPStatus.NOT_FOUND)

        do_GET = _serve  # noqa: N815
        do_HEAD = _serve  # noqa: N815

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.registry")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--socket", type=Path, required=True, help="containerd's socket")
    parser.add_argument("--content", type=Path, required=True, help="its content store")
    parser.add_argument(
        "--load-command", required=True, help="how to load an image; IMAGE is replaced"
    )
    args = parser.parse_args(argv)
    store = Store(socket=args.socket, content=args.content)
    server = ThreadingHTTPServer(
        ("127.0.0.1", args.port), handler(store=store, load_command=args.load_command)
    )
    server.daemon_threads = True
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
