"""Where pods go once the real node runs: kwok's node and the real node's taint.

:class:`devcluster.nodeconfig.Placement` names the two modes. ``SHARED`` keeps the
real node tainted (pods opt in with its selector and toleration) and kwok's node
open. ``ONLY`` (``devcluster up --node real --kwok off``) removes kwok's Node object
and the real node's taint, so unchanged workloads run in real containers, as on a kind
cluster. Removed, not tainted: the scheduler counts a tainted node as a domain of a
topology spread constraint (``nodeTaintsPolicy: Ignore`` is the default), so a
Deployment spread over hostnames with ``DoNotSchedule`` would leave pods Pending for
the sake of a node they cannot use. kwok keeps running with no node to manage, so
switching back recreates the node and restarts nothing; pods that were bound to kwok's
node are deleted with it (the pod garbage collector).

The kubelet applies its taints only when it registers, so :func:`apply` writes the real
node's taint through the API as well. ``node.start`` calls :func:`apply` once the real
node is Ready; ``node.stop`` calls :func:`release` when the real node leaves a running
cluster, so kwok's node takes pods again.
"""

from __future__ import annotations

from typing import Any

from devcluster import api, components, errors, nodeconfig

MERGE_PATCH = "application/merge-patch+json"


def _set_ours(client: api.Api, *, node: str, taint: dict[str, str] | None) -> None:
    """Make ``taint`` the node's only ``devcluster.io/node`` taint (None: no such taint);
    leave every other taint (the node lifecycle controller's) as it is."""
    try:
        current = client.call("GET", f"/api/v1/nodes/{node}")
    except errors.ApiError as exc:
        if exc.status == 404:
            return
        raise
    taints: list[dict[str, Any]] = current.get("spec", {}).get("taints") or []
    kept = [t for t in taints if t.get("key") != nodeconfig.LABEL_KEY]
    wanted = kept + ([taint] if taint else [])
    if wanted == taints:
        return
    # A merge patch replaces the whole list; resourceVersion makes a concurrent change
    # (the lifecycle controller adding a taint) fail with 409 instead of being lost.
    body = {
        "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
        "spec": {"taints": wanted or None},
    }
    client.call("PATCH", f"/api/v1/nodes/{node}", body=body, content_type=MERGE_PATCH)


def _retrying(client: api.Api, *, node: str, taint: dict[str, str] | None) -> None:
    for attempt in range(5):
        try:
            _set_ours(client, node=node, taint=taint)
            return
        except errors.ApiError as exc:
            if exc.status != 409 or attempt == 4:
                raise


def _ensure_kwok_node(client: api.Api, *, kubelet_port: int) -> None:
    try:
        client.call("POST", "/api/v1/nodes", body=components.fake_node(kubelet_port=kubelet_port))
    except errors.ApiError as exc:
        if exc.status != 409:  # there already
            raise


def _remove_kwok_node(client: api.Api) -> None:
    try:
        client.call("DELETE", f"/api/v1/nodes/{components.NODE_NAME}")
    except errors.ApiError as exc:
        if exc.status != 404:
            raise


def apply(client: api.Api, placement: nodeconfig.Placement, *, kubelet_port: int) -> None:
    """Make the nodes match ``placement`` (the real node exists; ``kubelet_port`` is
    kwok's, for a node recreated)."""
    if placement is nodeconfig.Placement.ONLY:
        _retrying(client, node=nodeconfig.NODE_NAME, taint=None)
        _remove_kwok_node(client)
    else:
        _ensure_kwok_node(client, kubelet_port=kubelet_port)
        _retrying(client, node=nodeconfig.NODE_NAME, taint=nodeconfig.real_taint())


def release(client: api.Api, *, kubelet_port: int) -> None:
    """kwok's node takes pods again (the real node is leaving)."""
    _ensure_kwok_node(client, kubelet_port=kubelet_port)


def describe(placement: nodeconfig.Placement) -> str:
    """One line for ``devcluster up``: which pods the real node takes."""
    if placement is nodeconfig.Placement.ONLY:
        return (
            f"every pod runs on {nodeconfig.NODE_NAME} (real containers); kwok's "
            f"{components.NODE_NAME} is removed (`up --node real` brings it back)"
        )
    return (
        f"pods need nodeSelector {nodeconfig.node_selector()} and the toleration "
        f"{nodeconfig.toleration()} to run on {nodeconfig.NODE_NAME}"
    )
