"""The informers' families: what the caches hold per kind, read at scrape time.

``playbook_operator_informer_objects`` and ``…_bytes`` sum, per kind, what each
informer (primary and dependent, every namespace) holds (:class:`runner.watch.budget.Held`):
the cache budget's figures, as the ``informer synced`` line logs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from runner.kube.types import GVK
from runner.prometheus import registry as registry_mod
from runner.watch import budget

_FAMILIES = (
    ("playbook_operator_informer_objects", "Objects the informers hold."),
    (
        "playbook_operator_informer_bytes",
        "Approximate size of what the informers hold (compact JSON bytes).",
    ),
)


class InformerGauges:
    """What the informers hold per kind: objects and approximate bytes."""

    def __init__(self, held: Callable[[], list[tuple[GVK, budget.Held]]]) -> None:
        self._held = held

    def collect(self) -> Iterator[registry_mod.Family]:
        totals: dict[GVK, list[int]] = {}
        for gvk, holding in self._held():
            total = totals.setdefault(gvk, [0, 0])
            total[0] += holding.objects
            total[1] += holding.bytes
        for index, (name, help_text) in enumerate(_FAMILIES):
            family = registry_mod.GaugeFamily(name, help_text, labels=["group", "version", "kind"])
            for gvk, total in totals.items():
                family.add_metric([gvk.group, gvk.version, gvk.kind], total[index])
            yield family
