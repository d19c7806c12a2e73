"""The workers: one controller per watch, and what the dev loop asks of them.

The last runnable group (:mod:`runner.operations.runnables`), started once this replica
may write (after the election): for each watch, a reconciler (watch → queue →
**reconcile** → ansible → status) behind a controller's queue and workers. At shutdown
they stop taking work and the running reconciles get until the grace period's
deadline to finish.

:class:`Controllers` owns them, so the dev loop's hooks (:mod:`runner.tools.devloop`:
reconcile a kind again, take edited watches in place) and the shard hand-over act on
them here rather than reaching into what the manager built.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Mapping, Sequence

from runner.ansible import launch, plan
from runner.config import entry, sections
from runner.kube import client as client_mod
from runner.kube.types import GVK, ObjectKey, object_key
from runner.operations import health, metrics, sharding
from runner.queue import settle, trigger, workqueue
from runner.rbac import record as rbac_record
from runner.reconcile import controller as controller_mod
from runner.reconcile import evidence, reconciler, startup
from runner.status import recorder
from runner.watch import dependents

_TAKEOVER = trigger.Trigger(trigger.Kind.TAKEOVER, "shard moved to this replica")


def _event_filters(watch: entry.Watch) -> tuple[object, ...]:
    """What a watch's informers and predicates were built from."""
    return (
        watch.selector,
        watch.watch_annotations_changes,
        watch.watch_dependent_resources,
        watch.watch_cluster_scoped_resources,
        watch.watch_dependent_readiness,  # read by the dependent watches' handlers
        watch.dependent_selector,  # the cache budget of the dependent informers
        watch.cache_secrets,
    )


@dataclasses.dataclass(frozen=True)
class RunParts:
    """What the runs of every watch share: how Ansible is started and where it talks."""

    runner: launch.AnsibleRunner
    environment: plan.Environment  # the owner-injecting proxy, or a kubeconfig
    run_env: Mapping[str, str]  # on top of each run's kubeconfig (custom metrics' URL)
    events: recorder.Recorder
    rbac: rbac_record.Record
    children: startup.Children  # what runs touched: status.reconciledChildren
    slots: threading.Semaphore | None  # --max-concurrent-runs across every kind


class Controllers:
    """The controller of every watch, by kind."""

    def __init__(
        self,
        *,
        reconcile: sections.ReconcileSettings,
        ansible: sections.AnsibleSettings,
        client: client_mod.Client,
        registry: metrics.Metrics,
        runs: RunParts,
        gate: sharding.Shards | None,
        spread: startup.Spread | None,
    ) -> None:
        self._reconcile = reconcile
        self._ansible = ansible
        self._client = client
        self._registry = registry
        self._runs = runs
        self._gate = gate
        self._spread = spread
        self.by_kind: dict[GVK, controller_mod.Controller] = {}

    def add(self, watch: entry.Watch, *, cache: reconciler.Cache) -> controller_mod.Controller:
        """The controller of ``watch``, reading its kind from ``cache``."""
        runs = self._runs

        def current() -> entry.Watch:
            return one_kind.watch  # replaced in place when watches.yaml is reloaded

        # What the restart spread compares: this watch's inputs, digested when a run starts.
        inputs = evidence.Inputs(current).current
        one_kind = reconciler.Reconciler(
            watch=watch,
            reconcile=self._reconcile,
            ansible=self._ansible,
            client=self._client,
            runner=runs.runner,
            environment=runs.environment,
            cache=cache,
            on_run=self._registry.observe_run,
            events=runs.events,
            run_env=runs.run_env,
            rbac=runs.rbac,
            children=runs.children.for_watch(inputs),
            run_slots=runs.slots,
        )
        ctrl = controller_mod.Controller(
            reconciler=one_kind,
            work_queue=workqueue.WorkQueue(
                base_delay=self._reconcile.backoff_base,
                max_delay=self._reconcile.backoff_max,
                observer=self._registry.queue_observer(controller_mod.name_for(watch.gvk)),
                settle_after=settle.FOLLOW_UP_SETTLE,
            ),
            workers=self._reconcile.workers_for(watch.gvk),
            observer=self._registry,
            gate=self._gate,
            spread=self._spread.for_watch(inputs) if self._spread is not None else None,
        )
        self._registry.add_controller(name=ctrl.name, workers=ctrl.workers, work_queue=ctrl.queue)
        self.by_kind[watch.gvk] = ctrl
        return ctrl

    def enqueue_for(self) -> dict[GVK, dependents.Enqueue]:
        """How the dependent watches enqueue an owner of each kind."""
        return {
            gvk: ctrl.enqueue if self._gate else _enqueuer(ctrl.queue)
            for gvk, ctrl in self.by_kind.items()
        }

    def timeouts(self) -> list[tuple[controller_mod.Controller, float | None]]:
        """Each controller with its run timeout, for /healthz's stuck-worker check."""
        return [
            (ctrl, health.run_timeout(self._reconcile, ctrl.reconciler.watch))
            for ctrl in self.by_kind.values()
        ]

    def handed_over(self, items: Iterable[sharding.Item]) -> None:
        """Objects whose shard moved to this replica: reconcile them."""
        for gvk, key in items:
            ctrl = self.by_kind.get(gvk)
            if ctrl is not None:
                ctrl.enqueue(key, workqueue.Priority.RESYNC, why=_TAKEOVER)

    # -- development mode (runner.tools.devloop) ------------------------------------

    def requeue(self, gvk: GVK, *, namespaces: Sequence[str | None]) -> int:
        """Enqueue every custom resource of ``gvk`` in ``namespaces`` again (its role
        changed); how many.

        Listed from the API server, not the informers' stores: a dev-mode edit is rare
        and the list is the truth of the moment.
        """
        ctrl = self.by_kind.get(gvk)
        if ctrl is None:
            return 0
        selector = ctrl.reconciler.watch.selector
        keys: set[ObjectKey] = set()
        for namespace in namespaces:
            for item in self._client.list(gvk, namespace=namespace).get("items") or []:
                if selector.matches((item.get("metadata") or {}).get("labels") or {}):
                    keys.add(object_key(item))
        for key in keys:
            ctrl.queue.add(key, why=trigger.Trigger(trigger.Kind.DEV_EDIT, "role or playbook"))
        return len(keys)

    def replace_watches(self, loaded: Sequence[entry.Watch]) -> bool:
        """Take edited watches in place: the same kinds with other roles, vars, periods,
        finalizers or blacklists. False when kinds were added or removed, or when what
        the informers filter or watch changed: only a new start applies that."""
        new = {w.gvk: w for w in loaded}
        if new.keys() != self.by_kind.keys():
            return False
        for gvk, watch in new.items():
            old = self.by_kind[gvk].reconciler.watch
            if _event_filters(old) != _event_filters(watch):
                return False
        for gvk, watch in new.items():
            self.by_kind[gvk].reconciler.watch = watch  # read afresh by every reconcile
        return True

    # -- the runnable ---------------------------------------------------------------

    def start(self, stop: threading.Event) -> bool:
        for ctrl in self.by_kind.values():
            ctrl.start()
        return True

    def stop(self, *, deadline: float, clean: bool) -> bool:
        """Stop taking work and wait for running reconciles; True if all finished in time."""
        finished = True
        for ctrl in self.by_kind.values():
            finished = ctrl.stop(timeout=max(0.0, deadline - time.monotonic())) and finished
        return finished


def _enqueuer(work_queue: workqueue.WorkQueue) -> dependents.Enqueue:
    def enqueue(key: ObjectKey, priority: workqueue.Priority, why: trigger.Trigger) -> None:
        work_queue.add(key, priority=priority, why=why)

    return enqueue
