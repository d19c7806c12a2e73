"""Credentials for service accounts: mint a token (TokenRequest API) and write a
kubeconfig that uses it.

RBAC tests and "run the operator under its own service account" tests need a client
that is *not* ``system:masters``; a bound token from the TokenRequest API is what a
pod would get, without needing a pod.
"""

from __future__ import annotations

from pathlib import Path

from devcluster import errors, kubeconfig
from devcluster.cluster import Cluster


def ensure(cluster: Cluster, *, namespace: str, name: str) -> None:
    """Create the ServiceAccount ``namespace/name`` unless it exists."""
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    try:
        cluster.admin_api().call(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", body=body
        )
    except errors.ApiError as exc:
        if exc.status != 409:
            raise


def mint_token(
    cluster: Cluster, *, namespace: str, name: str, expiration_seconds: int = 3600
) -> str:
    """A bound token for ``system:serviceaccount:<namespace>:<name>``."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": expiration_seconds},
    }
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    answer = cluster.admin_api().call("POST", path, body=request)
    token = answer.get("status", {}).get("token")
    if not token:
        raise errors.ApiError(status=0, method="POST", path=path, message="no token in answer")
    return str(token)


def write_kubeconfig(
    cluster: Cluster,
    *,
    namespace: str,
    name: str,
    path: Path | None = None,
    create: bool = True,
    expiration_seconds: int = 3600,
) -> Path:
    """Write a kubeconfig acting as the service account; default path under the data dir.

    The kubeconfig's default namespace is the account's own, as in-cluster config would be.
    """
    if create:
        ensure(cluster, namespace=namespace, name=name)
    token = mint_token(
        cluster, namespace=namespace, name=name, expiration_seconds=expiration_seconds
    )
    target = path or cluster.layout.accounts_dir / f"{namespace}.{name}.kubeconfig"
    text = kubeconfig.render(
        server=cluster.server,
        ca_pem=cluster.ca_file.read_bytes(),
        user=f"system:serviceaccount:{namespace}:{name}",
        token=token,
        namespace=namespace,
    )
    return kubeconfig.write(target, text)
