"""What the metrics tests share: the golden sample (the runtime's whole exposition
before the families moved to their owners) and the reports that fill it."""

from __future__ import annotations

from pathlib import Path

from runner.kube.types import GVK
from runner.reconcile import controller
from runner.watch.predicate import Event, EventType

GOLDEN = Path(__file__).parent / "golden" / "exposition.txt"
MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
PROBE = GVK("probe.example.com", "v1", "Probe")


def report_reconciles(observer: controller.ReconcileObserver) -> None:
    """A matched primary event, a failed reconcile and a requeue_after."""
    obj = {
        "metadata": {"name": "m", "namespace": "ns", "creationTimestamp": "2024-05-06T07:08:09Z"}
    }
    observer.matched(gvk=MEMCACHED, event=Event(EventType.ADDED, obj))
    observer.reconciled(
        controller="memcached-controller",
        gvk=MEMCACHED,
        outcome=controller.Outcome.FAILED,
        action=controller.Action.ERROR,
        seconds=0.3,
    )
    observer.reconciled(
        controller="memcached-controller",
        gvk=MEMCACHED,
        outcome=controller.Outcome.REQUEUED,
        action=controller.Action.REQUEUE_AFTER,
        seconds=12.0,
    )


def golden_lines(names: list[str]) -> list[str]:
    """The golden sample's lines of these families (HELP, TYPE and samples)."""
    kept: list[str] = []
    name = ""
    for line in GOLDEN.read_text().splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
        if name in names:
            kept.append(line)
    return kept
