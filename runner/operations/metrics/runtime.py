"""The runtime's metrics: every owner's families on the one registry, and the one
object the manager wires them through.

Sits beside the flow watch → queue → reconcile → ansible → status and counts what
passes. Each family is defined by the package that owns what it measures — the
queue (:mod:`runner.queue.families`), the controllers (:mod:`runner.reconcile.families`),
Ansible runs (:mod:`runner.ansible.families`), the API (:mod:`runner.proxy.families`),
admission webhooks (:mod:`runner.webhook.families`), informers
(:mod:`runner.watch.families`), roles (:mod:`runner.operations.metrics.custom`) —
and registered here on one :class:`runner.prometheus.registry.Registry`. Names, types
and labels of the upstream families are those ansible-operator exposes, so its
dashboards and alerts keep working; docs/reference.md lists every family.

:class:`Metrics` is also the observer the controllers, the work queues and the
webhook server report to. Families read at scrape time from objects the manager
builds (warm launchers, sharding, informers, the API client) are collectors their
owners define, added with :meth:`Metrics.add`.
"""

from __future__ import annotations

from typing import Any

import runner
from runner.ansible import families as ansible_families
from runner.kube.types import GVK
from runner.operations.metrics import custom
from runner.prometheus import registry as registry_mod
from runner.proxy import families as proxy_families
from runner.queue import families as queue_families
from runner.queue import meter, workqueue
from runner.reconcile import families as reconcile_families
from runner.watch.predicate import Event
from runner.webhook import families as webhook_families


class Metrics:
    """The runtime's metrics on a private registry (no process-global state)."""

    def __init__(self) -> None:
        self.registry = registry_mod.Registry()
        registry = self.registry
        self.controllers = reconcile_families.ControllerFamilies(registry)
        self.queues = queue_families.QueueFamilies(registry)
        self.runs = ansible_families.RunFamilies(registry)
        self.webhooks = webhook_families.WebhookFamilies(registry)
        # The RBAC record counts runs' requests the API server denied.
        self.api_denied = proxy_families.denied_counter(registry)
        self.roles = custom.RoleMetrics(registry)
        build = registry.gauge(
            "playbook_operator_build_info", "Build information; the value is always 1.", ["version"]
        )
        build.labels(version=runner.__version__).set(1)

    def add(self, collector: registry_mod.Collector) -> None:
        """Families an owner reads at scrape time (a name already in use raises ValueError)."""
        self.registry.register(collector)

    # -- what the controllers, queues, runs and webhooks report ------------------

    def add_controller(self, *, name: str, workers: int, work_queue: workqueue.WorkQueue) -> None:
        """Series of one controller, created when it is, as controller-runtime does,
        and its queue, read at each scrape."""
        self.controllers.add_controller(name=name, workers=workers)
        self.queues.add(name, work_queue)

    def queue_observer(self, name: str) -> meter.QueueObserver:
        """Waits and work times of the queue of controller ``name``."""
        return self.queues.observer(name)

    def matched(self, *, gvk: GVK, event: Event) -> None:
        """A primary event passed the predicates: track the object's creation time."""
        self.controllers.matched(gvk=gvk, event=event)

    def reconciled(
        self, *, controller: str, gvk: GVK, outcome: str, action: str, seconds: float
    ) -> None:
        self.controllers.reconciled(
            controller=controller, gvk=gvk, outcome=outcome, action=action, seconds=seconds
        )

    def observe_run(
        self, gvk: GVK, *, failed: bool, seconds: float, trigger: str = "other"
    ) -> None:
        self.runs.observe_run(gvk, failed=failed, seconds=seconds, trigger=trigger)

    def webhook_started(self, webhook: str) -> None:
        """An admission request to ``webhook`` (its path) is being served."""
        self.webhooks.webhook_started(webhook)

    def webhook_finished(self, webhook: str, *, code: int, seconds: float) -> None:
        self.webhooks.webhook_finished(webhook, code=code, seconds=seconds)

    def apply_custom(self, payload: dict[str, Any]) -> None:
        """Create or update one role metric; raises ValueError on a bad payload."""
        self.roles.apply(payload)
