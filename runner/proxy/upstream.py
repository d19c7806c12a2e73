"""One forwarded request's API side: what it reads from the caches, marks, writes, and sees.

Part of the Ansible ↔ API stage (see the package docstring). The HTTP side — who
sent the request, its body, relaying the answer — is :mod:`runner.proxy.handler`;
this is what the request means to the runtime, with no HTTP in it:

- a GET may be answered from the caches (:mod:`runner.proxy.reads`);
- a create or replace body gets or keeps the owner's mark, and a server-side apply
  asks for an answer it can adopt (:mod:`runner.proxy.marking`);
- a write is booked from before it is forwarded until the run sees its answer
  (:class:`runner.proxy.writes.Write`);
- children the run created or read back are reported (``on_child``), so the
  manager starts the dependent watch for their kind.

:class:`Services` is what the server hands every request: the proxy's parts, built once.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from runner.kube import errors as kube_errors
from runner.kube import paths
from runner.kube.client import APPLY_PATCH, Client
from runner.kube.transport import JSON
from runner.kube.types import KubeObject, Resource
from runner.proxy import audit, marking, ownership, reads, routing, sessions, writes

log = logging.getLogger("runner.proxy")

ChildObserver = Callable[[ownership.Owner, Resource, KubeObject], None]


@dataclass
class Services:
    """The proxy's parts every request works with (``marks`` None: owners are not marked)."""

    client: Client
    sessions: sessions.Sessions
    reads: reads.CachedReads
    writes: writes.Writes
    audit: audit.Audit
    marks: marking.OwnerMarks | None
    on_child: ChildObserver | None
    read_only: bool
    version: bytes | None = None  # the API server's /version answer, once seen


class Exchange:
    """The API side of one request of ``session``'s run, from its target to its answer."""

    def __init__(
        self,
        services: Services,
        session: sessions.Session,
        *,
        method: str,
        path: str,
        content_type: str,
    ) -> None:
        self._services = services
        self._session = session
        self._method = method
        self._path = path
        self._content_type = content_type
        self.url = urlsplit(path)
        self.query = parse_qs(self.url.query)
        self.target = paths.parse_path(self.url.path)
        self.resource = self._resource_of(self.target) if self.target else None
        self._applying = False  # a server-side apply whose 201 answer means "created by us"
        self._answered: Any = None  # the object the API server answered with, if one

    def _resource_of(self, target: paths.Target) -> Resource | None:
        try:
            return self._services.client.resource_for(
                group=target.group, version=target.version, plural=target.plural
            )
        except kube_errors.KubeError:
            return None

    def cached(self) -> bytes | None:
        """A GET's answer from the runner's caches, or None: ask the API server."""
        found = self._services.reads.lookup(self._session, self.target, self.resource, self.url)
        if found is None or self.resource is None:
            return None
        self._services.audit.account(self._session, method="GET", path=self._path, cached=True)
        self._observe(found)
        return json.dumps(found).encode()

    def outgoing(
        self, body: bytes | None, headers: dict[str, str]
    ) -> tuple[bytes | None, dict[str, str]]:
        """The body and headers to forward, marked with the owner where the run creates."""
        marks, target, resource = self._services.marks, self.target, self.resource
        if marks is None or not target or not resource or not body or target.subresource:
            return body, headers
        if "get" not in resource.verbs:
            # A kind the API server never stores (SelfSubjectAccessReview, TokenReview...):
            # it refuses any metadata it did not expect, and nothing is there to collect.
            return body, headers
        owner = self._session.owner
        if self._method in ("POST", "PUT") and not routing.is_json(self._content_type):
            # Protobuf (or another encoding): the proxy does not decode it, so it passes
            # through as sent and a created child gets no owner from the proxy.
            log.info(
                "owner mark not applied: the body is not JSON",
                extra={
                    "method": self._method,
                    "path": self._path,
                    "content_type": self._content_type,
                    "owner": f"{owner.gvk.kind} {owner.namespace}/{owner.name}",
                },
            )
            return body, headers
        if self._method == "POST" and not target.name:
            body = marks.on_create(owner, target, resource, body)
        elif self._method == "PUT" and target.name:
            body = marks.on_replace(owner, target, resource, body)
        elif self._method == "PATCH" and target.name:
            self._applying = _is_apply(self._content_type)
            if self._applying:  # the created object must be readable to be adopted
                headers = {k: v for k, v in headers.items() if k.lower() != "accept"}
                headers["Accept"] = JSON
        return body, headers

    def write(self, body: bytes | None) -> writes.Write:
        """The bookkeeping of what this request writes, to enter before forwarding it."""
        return writes.Write(
            self._services.writes,
            self._session,
            method=self._method,
            target=self.target,
            resource=self.resource,
            body=body,
        )

    def is_stream(self, content_type: str = "") -> bool:
        """Whether the answer is relayed as it comes (``content_type``: once it is known)."""
        return routing.is_stream(self.url, self.query, content_type)

    def answer(self, status: int, data: bytes, write: writes.Write) -> bytes:
        """What the run gets of the API server's answer; ``write`` is settled before it does."""
        if self._method == "GET" and self.url.path == "/version" and status == 200:
            self._services.version = data
        target, resource = self.target, self.resource
        payload: Any = None
        if target and resource and 200 <= status < 300 and not target.subresource:
            with contextlib.suppress(ValueError):
                payload = json.loads(data)
        if self._applying and status == 201 and isinstance(payload, dict):
            assert target is not None and resource is not None and self._services.marks
            self._services.writes.remember(payload)
            owner = self._session.owner
            if "dryRun" in self.query:  # nothing was created: show what would be
                ownership.inject(
                    owner,
                    payload,
                    child_namespaced=resource.namespaced,
                    child_namespace=target.namespace,
                )
            else:
                payload = self._services.marks.adopt(owner, target, resource, payload)
            data = json.dumps(payload).encode()
        # Before the run sees the answer: its next read of the object is fresh, and the
        # watch echo of this write is known.
        write.answered(status=status, payload=payload, dry_run="dryRun" in self.query)
        self._answered = payload
        return data

    def passed_through(self, status: int, write: writes.Write) -> None:
        """An answer relayed unread (not JSON): book the write as answered, object unknown."""
        write.answered(status=status, payload=None, dry_run="dryRun" in self.query)

    def answered(self) -> None:
        """The run has the answer: report the child it shows, if any."""
        if self._answered is not None:
            self._observe(self._answered)

    def _observe(self, payload: Any) -> None:
        on_child, resource = self._services.on_child, self.resource
        if on_child is None or resource is None or not isinstance(payload, dict):
            return
        owner = self._session.owner
        items = payload.get("items") if "items" in payload else [payload]
        for item in items or []:
            if isinstance(item, dict) and owner.owns(item):
                on_child(owner, resource, item)
                return  # one sighting per response is enough to start a watch


def _is_apply(content_type: str) -> bool:
    return content_type.split(";", maxsplit=1)[0].strip() == APPLY_PATCH
