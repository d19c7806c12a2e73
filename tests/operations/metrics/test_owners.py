"""Each package's families, registered alone on a registry of their own, are written
exactly as in the runtime's whole exposition (the golden sample): a family lives with
what it measures and needs nothing of runner.operations."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runner.ansible import families as ansible_families
from runner.kube.types import ObjectKey
from runner.operations.sharding import families as sharding_families
from runner.prometheus import exposition, registry
from runner.proxy import families as proxy_families
from runner.queue import families as queue_families
from runner.queue import workqueue
from runner.reconcile import families as reconcile_families
from runner.warm import families as warm_families
from runner.watch import budget
from runner.watch import families as watch_families
from runner.webhook import families as webhook_families
from tests.operations.metrics import samples

MEMCACHED = samples.MEMCACHED
PROBE = samples.PROBE


def queues(one: registry.Registry) -> None:
    families = queue_families.QueueFamilies(one)
    work_queue = workqueue.WorkQueue(base_delay=0.01, max_delay=1.0)
    work_queue.add(ObjectKey("ns/m"))
    families.add("memcached-controller", work_queue)
    families.observer("memcached-controller").queued(0.002)
    families.observer("memcached-controller").worked(1.5)


def runs(one: registry.Registry) -> None:
    families = ansible_families.RunFamilies(one)
    families.observe_run(MEMCACHED, failed=True, seconds=0.2, trigger="watch")
    families.observe_run(MEMCACHED, failed=False, seconds=3.0)


def launchers(one: registry.Registry) -> None:
    one.register(
        warm_families.LauncherCollector(
            memory=lambda: 123456789,
            running=lambda: 2,
            outcomes=lambda: {"warm": 5, "cold": 1},
            recycles=lambda: {"runs": 1, "rss": 0},
        )
    )


def shards(one: registry.Registry) -> None:
    one.register(
        sharding_families.ShardCollector(
            owned=lambda: 7,
            members=lambda: 3,
            handovers=lambda: {"acquired": 2},
            view_changes=lambda: 4,
        )
    )


def informers(one: registry.Registry) -> None:
    held = [(MEMCACHED, budget.Held(objects=3, bytes=4096)), (PROBE, budget.Held(1, 10))]
    one.register(watch_families.InformerGauges(lambda: held))


def api(one: registry.Registry) -> None:
    proxy_families.denied_counter(one).labels(
        group="apps", resource="deployments", verb="patch"
    ).inc()
    one.register(proxy_families.RequestCount(lambda: 1234567))


def webhooks(one: registry.Registry) -> None:
    families = webhook_families.WebhookFamilies(one)
    families.webhook_started("/validate")
    families.webhook_finished("/validate", code=200, seconds=0.04)
    families.webhook_started("/mutate")


def kinds(one: registry.Registry) -> None:
    one.register(
        reconcile_families.KindGauges(
            depth=lambda: {MEMCACHED: 1}, in_flight=lambda: {MEMCACHED: 0}
        )
    )


def controllers(one: registry.Registry) -> None:
    families = reconcile_families.ControllerFamilies(one)
    families.add_controller(name="memcached-controller", workers=2)
    samples.report_reconciles(families)


def family_names(text: str) -> list[str]:
    return [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(queues, 8, id="queue"),
        pytest.param(runs, 4, id="ansible-runs"),
        pytest.param(launchers, 4, id="warm-launchers"),
        pytest.param(shards, 4, id="sharding"),
        pytest.param(informers, 2, id="informers"),
        pytest.param(api, 2, id="api"),
        pytest.param(webhooks, 3, id="webhooks"),
        pytest.param(controllers, 7, id="controllers"),
        pytest.param(kinds, 2, id="controllers-per-kind"),
    ],
)
def test_an_owner_s_families_are_written_as_in_the_whole(
    build: Callable[[registry.Registry], None], expected: int
) -> None:
    one = registry.Registry()
    build(one)
    seen = exposition.exposition(one).decode().splitlines()
    names = family_names("\n".join(seen))
    assert len(names) == expected, f"expected {expected} families, saw {names}"
    whole = samples.golden_lines(names)
    assert seen == whole, (
        "expected the golden sample's lines:\n" + "\n".join(whole) + "\nsaw:\n" + "\n".join(seen)
    )
