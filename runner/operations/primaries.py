"""The primary watches: each entry of watches.yaml made into a controller and its informers.

Where the stages of one watch meet (watch → queue → reconcile): the kind is looked up
in discovery (a kind the cluster does not serve stops the runner at start-up, naming
watches.yaml), a controller is made for it (:mod:`runner.operations.controllers`), and
one informer per watched namespace (one for a cluster-scoped kind) feeds the
controller's queue through the primary predicate, held by
:class:`runner.operations.caches.Caches`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from runner.base import errors
from runner.config import entry
from runner.kube import client as client_mod
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, Resource
from runner.operations import caches, controllers, needs
from runner.reconcile import pause
from runner.status import rejection
from runner.watch import predicate as predicate_mod
from runner.watch import source

log = logging.getLogger("runner.manager")


class PrimaryWatches:
    """Makes the controller and primary informers of each watch; keeps each kind's resource."""

    def __init__(
        self,
        *,
        client: client_mod.Client,
        discover: Callable[[GVK], Resource],
        controllers: controllers.Controllers,
        caches: caches.Caches,
        needs: needs.RuntimeNeeds,
        rejections: rejection.Reporter,
    ) -> None:
        self._client = client
        self._discover = discover  # waits while the API server cannot answer yet
        self._controllers = controllers
        self._caches = caches
        self._needs = needs
        self._rejections = rejections
        self.resources: dict[GVK, Resource] = {}  # how the cluster serves each watched kind

    def add_all(
        self, entries: Sequence[entry.Watch], *, watches_file: Path, namespaces: Sequence[str]
    ) -> None:
        if not entries:
            log.warning(
                "nothing to watch: watches.yaml has no entries; add one with "
                "'playbook-operator create api'",
                extra={"file": str(watches_file)},
            )
        for watch in entries:
            try:
                resource = self._discover(watch.gvk)
            except kube_errors.NotFoundError as e:
                # As ansible-operator stops on "no matches for kind"; the usual cause is
                # a kind just added (create api) whose CRD is not installed yet.
                raise errors.ConfigError(
                    f"{watches_file}: the cluster does not serve {watch.gvk.kind} in "
                    f"{watch.gvk.api_version}: install its CRD first (make install)"
                ) from e
            self.add(watch, resource, namespaces=list(namespaces) or [None])

    def add(self, watch: entry.Watch, resource: Resource, *, namespaces: list[str | None]) -> None:
        self.resources[watch.gvk] = resource
        self._needs.primary(watch, resource)
        ctrl = self._controllers.add(watch, cache=self._caches.lookup(watch.gvk))
        handle = ctrl.handler(
            pause.or_changed(
                predicate_mod.primary(
                    watch_annotations=watch.watch_annotations_changes,
                    selector_matches=watch.selector.matches,
                )
            )
        )
        self._caches.add(
            watch.gvk,
            [
                source.Informer(
                    client=self._client,
                    resource=resource,
                    namespace=namespace,
                    handler=handle,
                    log=log,
                    on_rejected=self._rejections.hook(resource),
                )
                for namespace in (namespaces if resource.namespaced else [None])
            ],
        )
