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

The relay itself is :mod:`devcluster.relay` (bounded, it never reads what it relays);
:mod:`devcluster.node` starts and stops it with the node's other processes, as the
component :data:`devcluster.nodeconfig.APISERVER_RELAY`.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from devcluster import api, errors, nodeconfig

#: The relay's port on the bridge address (the apiserver's usual port).
PORT = 6443
#: What marks the endpoints as ours (and keeps the mirroring controller off them).
MANAGED_BY = "devcluster"
_SERVICE_NAME = "kubernetes"
_PORT_NAME = "https"


def command(*, target_port: int) -> list[str]:
    """The relay's command line: this interpreter, this module, the bridge to loopback."""
    return [
        sys.executable,
        "-m",
        "devcluster.relay",
        f"--listen={nodeconfig.GATEWAY}:{PORT}",
        f"--target=127.0.0.1:{target_port}",
    ]


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
