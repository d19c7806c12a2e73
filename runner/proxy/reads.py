"""Which GETs of a run the proxy answers from the runner's informer caches.

Part of the Ansible ↔ API stage (see the package docstring). A read of a single
object of a kind the runner watches is looked up in its caches (``X-Cache: HIT``);
every other read goes to the API server, and — like ansible-operator, at logr's
V(2) — a "Skipping cache lookup" line says why, or "Cache miss". A run's read of
an object it wrote goes to the API server until the cache holds the written
version (:meth:`runner.proxy.writes.Writes.behind`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from urllib.parse import SplitResult, parse_qs

from runner.kube import paths
from runner.kube.types import GVK, KubeObject, Resource
from runner.proxy import ownership, routing, sessions, writes

log = logging.getLogger("runner.proxy")

#: logr's V(2) (``--zap-log-level=2``), where ansible-operator logs its cache decisions.
_V2 = logging.DEBUG - 1

CacheLookup = Callable[[Resource, str, str], KubeObject | None]


class CachedReads:
    """The cache side of a run's reads.

    ``cache`` looks objects up in the runner's informers, ``caches`` tells which kinds
    they hold, and ``blacklists`` (owner kind → kinds; the caller may add watches to
    it later) names kinds a watch never serves from a cache.
    """

    def __init__(
        self,
        *,
        cache: CacheLookup | None,
        caches: Callable[[GVK], bool] | None,
        blacklists: Mapping[GVK, frozenset[GVK]],
        own_writes: writes.Writes,
    ) -> None:
        self.cache = cache
        self.caches = caches
        self.blacklists = blacklists
        self._writes = own_writes

    def lookup(
        self,
        session: sessions.Session,
        target: paths.Target | None,
        resource: Resource | None,
        url: SplitResult,
    ) -> KubeObject | None:
        """A GET answered from the runner's caches, or None (and why, at debug level)."""
        reason = self._uncached(session.owner, target, resource, url)
        if reason is None and target is not None and resource is not None and self.cache:
            found = self.cache(resource, target.namespace, target.name)
            if found is None:
                reason = "cache miss"
            else:
                key = (resource.gvk, target.namespace, target.name)
                reason = self._writes.behind(session, key, found)
                if reason is None:
                    return found
        if log.isEnabledFor(_V2):
            message = "Cache miss" if reason == "cache miss" else "Skipping cache lookup"
            extra = {"resource": routing.request_info(url, target), "reason": reason}
            log.log(_V2, message, extra=extra)
        return None

    def _uncached(
        self,
        owner: ownership.Owner,
        target: paths.Target | None,
        resource: Resource | None,
        url: SplitResult,
    ) -> str | None:
        """Why a GET is not looked up in a cache (None: it is)."""
        if target is None:
            return "not a resource request"
        if target.subresource:
            return f"subresource {target.subresource}"
        if not target.name:
            return "watch" if routing.flag(parse_qs(url.query), "watch") else "list"
        if resource is None:
            return "unknown resource"
        if self.cache is None:
            return "cached reads are off"
        if resource.gvk in self.blacklists.get(owner.gvk, frozenset()):
            return "blacklisted"
        if self.caches is not None and not self.caches(resource.gvk):
            return "kind not cached"
        return None
