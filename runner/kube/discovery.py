"""Which REST resource serves each kind: the kube client's discovery cache.

The client turns a group/version/kind into a URL path through the
:class:`runner.kube.types.Resource` found here; the API proxy looks resources up
by plural, once per request. Each group/version is read from the API server once
and cached until :meth:`Discovery.forget` (after CRDs change). Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from runner.kube import errors
from runner.kube.types import GVK, Resource

#: GETs one discovery document (``/api/v1``, ``/apis/<group>/<version>``), decoded.
Fetch = Callable[[str], Any]


class Discovery:
    """Resources by kind and by (group, version, plural), read through ``fetch``."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._resources: dict[GVK, Resource] = {}
        # The same resources by (group, version, plural): the proxy looks one up per request.
        self._by_path: dict[tuple[str, str, str], Resource] = {}
        self._lock = threading.Lock()

    def resource(self, gvk: GVK) -> Resource:
        """How ``gvk`` is served; discovered once per group/version, then cached."""
        cached = self._resources.get(gvk)
        if cached is None:
            self.discover(gvk.group, gvk.version)
            cached = self._resources.get(gvk)
        if cached is None:
            raise errors.NotFoundError(
                status=404,
                method="DISCOVER",
                path=f"{gvk.group}/{gvk.version}",
                body={"reason": "NotFound", "message": f"kind {gvk.kind} is not served"},
            )
        return cached

    def resource_for(self, *, group: str, version: str, plural: str) -> Resource | None:
        """The resource served at ``plural`` in group/version (None if unknown)."""
        cached = self._by_path.get((group, version, plural))
        if cached is not None:
            return cached
        try:
            found = self.discover(group, version)
        except errors.ApiError:
            return None
        return next((r for r in found if r.plural == plural), None)

    def discover(self, group: str, version: str) -> list[Resource]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        listing = self._fetch(path)
        subs: dict[str, set[str]] = {}
        for item in listing.get("resources", []):
            name = str(item["name"])
            if "/" in name:
                parent, _, sub = name.partition("/")
                subs.setdefault(parent, set()).add(sub)
        found: list[Resource] = []
        for item in listing.get("resources", []):
            name = str(item["name"])
            if "/" in name:
                continue
            found.append(
                Resource(
                    gvk=GVK(group, version, str(item["kind"])),
                    plural=name,
                    namespaced=bool(item.get("namespaced")),
                    verbs=frozenset(item.get("verbs", [])),
                    subresources=frozenset(subs.get(name, set())),
                )
            )
        with self._lock:
            self._resources.update({r.gvk: r for r in found})
            self._by_path.update({(group, version, r.plural): r for r in found})
        return found

    def forget(self) -> None:
        """Drop cached discovery (after CRDs change)."""
        with self._lock:
            self._resources.clear()
            self._by_path.clear()
