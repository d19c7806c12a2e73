"""The Ansible runs' families: ansible-operator's ``ansible_operator_*`` and ours.

Each finished run of a role or playbook is counted once, by kind, why it ran (the
trigger, :class:`runner.queue.trigger.Kind`'s values: a bounded label) and result,
and timed. ansible-operator's label ``GVK`` is Go's ``GroupVersionKind.String()``.
"""

from __future__ import annotations

from runner.kube.types import GVK
from runner.prometheus import registry as registry_mod


def gvk_label(gvk: GVK) -> str:
    """Go's ``schema.GroupVersionKind.String()``, ansible-operator's ``GVK`` label value."""
    return f"{gvk.group}/{gvk.version}, Kind={gvk.kind}"


class RunFamilies:
    """Ansible runs of every watch, on one registry."""

    def __init__(self, registry: registry_mod.Registry) -> None:
        self.runs = registry.counter(
            "playbook_operator_runs_total",
            "Ansible runs by kind, why they ran (trigger) and result (succeeded, failed).",
            ["group", "version", "kind", "trigger", "result"],
        )
        self.ansible_seconds = registry.histogram(
            "playbook_operator_ansible_run_duration_seconds",
            "Wall time of one Ansible run.",
            ["group", "version", "kind", "result"],
            buckets=registry_mod.DURATION_BUCKETS,
        )
        # ansible-operator's own.
        self.ansible_results = registry.gauge(
            "ansible_operator_reconcile_result",
            "Ansible runs per GVK and result (succeeded, failed); only ever increases.",
            ["GVK", "result"],
        )
        self.ansible_runs = registry.histogram(
            "ansible_operator_reconciles",
            "Seconds one Ansible run of a GVK takes.",
            ["GVK"],
            buckets=registry_mod.GO_DEFAULT_BUCKETS,
        )

    def observe_run(
        self, gvk: GVK, *, failed: bool, seconds: float, trigger: str = "other"
    ) -> None:
        self.runs.labels(
            group=gvk.group,
            version=gvk.version,
            kind=gvk.kind,
            trigger=trigger,
            result="failed" if failed else "succeeded",
        ).inc()
        self.ansible_seconds.labels(
            group=gvk.group, version=gvk.version, kind=gvk.kind, result="failed" if failed else "ok"
        ).observe(seconds)
        self.ansible_results.labels(
            GVK=gvk_label(gvk), result="failed" if failed else "succeeded"
        ).inc()
        self.ansible_runs.labels(GVK=gvk_label(gvk)).observe(seconds)
