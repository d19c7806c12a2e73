"""The API server as pods on the real node reach it: a relay on the bridge, published as
the ``kubernetes`` Service's endpoints.

A pod's in-cluster client dials ``kubernetes.default.svc`` (ClusterIP 10.0.0.1:443),
which kube-proxy can only DNAT to an endpoint the pod can route to. The apiserver
listens on 127.0.0.1 only, and Endpoints validation rejects loopback addresses. So
``up --node real`` also runs this relay: it listens on the bridge's own address
(:data:`devcluster.nodeconfig.GATEWAY`:6443; the bridge is a device devcluster creates,
nothing beyond the machine routes to it) and copies bytes to and from 127.0.0.1:<the
apiserver's port>. :func:`publish` then points the ``kubernetes`` Service's
EndpointSlice and Endpoints at it.

Nothing overwrites them: the apiserver always runs with
``--endpoint-reconciler-type=none`` (see :func:`devcluster.components.apiserver`), a flag
it already had for the fake node only. TLS passes through untouched: the pod verifies
the apiserver's own serving certificate, which is valid for 10.0.0.1 and
``kubernetes.default.svc``, and authenticates with its ServiceAccount token.

The relay is bounded: at most :data:`MAX_CONNECTIONS` at once; past that a new
connection is closed at once. It never reads what it relays.

Run as ``python -m devcluster.apirelay --listen HOST:PORT --target HOST:PORT``;
:mod:`devcluster.node` starts and stops it with the node's other processes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

from devcluster import api, errors, nodeconfig

#: The relay's port on the bridge address (the apiserver's usual port).
PORT = 6443
MAX_CONNECTIONS = 256
#: What marks the endpoints as ours (and keeps the mirroring controller off them).
MANAGED_BY = "devcluster"
_SERVICE_NAME = "kubernetes"
_PORT_NAME = "https"


def command(*, target_port: int) -> list[str]:
    """The relay's command line: this interpreter, this module, the bridge to loopback."""
    return [
        sys.executable,
        "-m",
        "devcluster.apirelay",
        f"--listen={nodeconfig.GATEWAY}:{PORT}",
        f"--target=127.0.0.1:{target_port}",
    ]


# -- the relay process ----------------------------------------------------------------


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # half-close: the other direction may still be talking
    except (ConnectionError, OSError):
        writer.close()


class _Relay:
    def __init__(self, *, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._open = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            writer.close()
            return
        self._open += 1
        writers = [writer]
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self._target), timeout=10.0
            )
            writers.append(upstream_writer)
            await asyncio.gather(_pump(reader, upstream_writer), _pump(upstream_reader, writer))
        except (OSError, TimeoutError):
            pass
        finally:
            self._open -= 1
            for each in writers:
                each.close()


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host, int(port)


async def _serve(*, listen: tuple[str, int], target: tuple[str, int]) -> None:
    relay = _Relay(target_host=target[0], target_port=target[1])
    server = await asyncio.start_server(relay.handle, host=listen[0], port=listen[1])
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    print(f"relaying {listen[0]}:{listen[1]} to {target[0]}:{target[1]}", flush=True)
    async with server:
        await stopping.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.apirelay")
    parser.add_argument("--listen", required=True, type=_address, help="HOST:PORT")
    parser.add_argument("--target", required=True, type=_address, help="HOST:PORT")
    args = parser.parse_args(argv)
    asyncio.run(_serve(listen=args.listen, target=args.target))
    return 0


# -- the kubernetes Service's endpoints ------------------------------------------------


def _metadata(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "default",
        "labels": {
            "kubernetes.io/service-name": _SERVICE_NAME,
            "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
            # The Endpoints are written here too; the mirroring controller must not copy
            # them into a second slice (the apiserver's own reconciler sets this as well).
            "endpointslice.kubernetes.io/skip-mirror": "true",
        },
    }


def endpoint_slice() -> dict[str, Any]:
    """The ``kubernetes`` Service's EndpointSlice (what kube-proxy reads): the relay."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _metadata(_SERVICE_NAME),
        "addressType": "IPv4",
        "endpoints": [{"addresses": [nodeconfig.GATEWAY], "conditions": {"ready": True}}],
        "ports": [{"name": _PORT_NAME, "port": PORT, "protocol": "TCP"}],
    }


def endpoints() -> dict[str, Any]:
    """The same as (deprecated) Endpoints, for clients that still read those."""
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": _metadata(_SERVICE_NAME),
        "subsets": [
            {
                "addresses": [{"ip": nodeconfig.GATEWAY}],
                "ports": [{"name": _PORT_NAME, "port": PORT, "protocol": "TCP"}],
            }
        ],
    }


_PATHS = {
    "EndpointSlice": "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
    "Endpoints": "/api/v1/namespaces/default/endpoints",
}


def publish(client: api.Api) -> None:
    """Point the ``kubernetes`` Service at the relay (create, or replace what is there)."""
    for body in (endpoint_slice(), endpoints()):
        collection = _PATHS[body["kind"]]
        try:
            client.call("POST", collection, body=body)
        except errors.ApiError as exc:
            if exc.status != 409:
                raise
            current = client.call("GET", f"{collection}/{_SERVICE_NAME}")
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            client.call("PUT", f"{collection}/{_SERVICE_NAME}", body=body)


def withdraw(client: api.Api) -> None:
    """Remove the endpoints :func:`publish` wrote (the relay is going away)."""
    for collection in _PATHS.values():
        with contextlib.suppress(errors.ApiError):
            current = client.call("GET", f"{collection}/{_SERVICE_NAME}")
            labels = current.get("metadata", {}).get("labels", {})
            if labels.get("endpointslice.kubernetes.io/managed-by") == MANAGED_BY:
                client.call("DELETE", f"{collection}/{_SERVICE_NAME}")


if __name__ == "__main__":
    sys.exit(main())
