"""What a run's write gets of its owner: marked on create, kept on replace, adopted after apply.

Part of the Ansible ↔ API stage (see the package docstring). The decisions are in
:mod:`runner.proxy.ownership` (pure functions of objects); this module applies
them to a request's body, or — after a server-side apply answered 201 Created —
with a follow-up request of its own through the operator's client. An owner is
only ever given to a child its run creates.
"""

from __future__ import annotations

import json
import logging

from runner.kube import errors as kube_errors
from runner.kube import paths
from runner.kube.client import MERGE_PATCH, Client
from runner.kube.types import KubeObject, Resource
from runner.proxy import ownership

log = logging.getLogger("runner.proxy")

_ADOPT_ATTEMPTS = 5  # follow-up patches tried when others change a just-created object


class OwnerMarks:
    """Owner marks on the objects runs create, through ``client`` when a request is needed."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def on_create(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, body: bytes
    ) -> bytes:
        """A create (POST) body with the owner's reference or annotations in it."""
        try:
            child = json.loads(body)
        except ValueError:
            return body  # not JSON (e.g. protobuf): pass through untouched
        if not isinstance(child, dict):
            return body
        namespace = target.namespace or str((child.get("metadata") or {}).get("namespace") or "")
        ownership.inject(
            owner, child, child_namespaced=resource.namespaced, child_namespace=namespace
        )
        return json.dumps(child).encode()

    def on_replace(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, body: bytes
    ) -> bytes:
        """A replace (PUT) keeps the owner's mark the live object has; it never adds one."""
        try:
            replacement = json.loads(body)
        except ValueError:
            return body
        if not isinstance(replacement, dict) or owner.owns(replacement):
            return body
        path = resource.path(namespace=target.namespace or None, name=target.name)
        try:
            live = self._client.request("GET", path)
        except kube_errors.KubeError:
            return body  # not there (the PUT fails too) or unreadable: add nothing
        if not isinstance(live, dict) or not ownership.keep(owner, replacement, live):
            return body
        return json.dumps(replacement).encode()

    def adopt(
        self, owner: ownership.Owner, target: paths.Target, resource: Resource, created: KubeObject
    ) -> KubeObject:
        """Mark an object that a server-side apply of this run just created (answered 201).

        The follow-up merge patch is pinned to the created uid and resourceVersion;
        on a conflict the object is read again and, if it is still the one created
        (same uid), patched again. Returns the object as last seen.
        """
        path = resource.path(namespace=target.namespace or None, name=target.name)
        uid = (created.get("metadata") or {}).get("uid")
        current = created
        problem = "changed by others on every attempt"
        for _ in range(_ADOPT_ATTEMPTS):
            patch = ownership.adoption_patch(
                owner,
                current,
                child_namespaced=resource.namespaced,
                child_namespace=target.namespace,
            )
            if patch is None:
                return current
            try:
                adopted: KubeObject = self._client.request(
                    "PATCH", path, body=patch, content_type=MERGE_PATCH
                )
                return adopted
            except kube_errors.ConflictError:
                pass
            except kube_errors.KubeError as exc:
                problem = str(exc)
                break
            try:
                current = self._client.request("GET", path)
            except kube_errors.NotFoundError:
                return created  # deleted meanwhile: nothing to own
            except kube_errors.KubeError as exc:
                problem = str(exc)
                break
            if (current.get("metadata") or {}).get("uid") != uid:
                return created  # deleted and created again by someone else: not ours
        log.warning(
            "could not add the owner to an object created by server-side apply",
            extra={"path": path, "owner": f"{owner.namespace}/{owner.name}", "error": problem},
        )
        return current
