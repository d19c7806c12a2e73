"""Every family the runtime exposes, with series in each, written byte for byte as
before the metrics were split by owner: names, labels, HELP and TYPE
lines, number formats and order are compatibility surface for dashboards."""

from __future__ import annotations

import difflib

import pytest

from runner.kube.types import ObjectKey
from runner.operations.metrics import runtime
from runner.operations.sharding import families as sharding_families
from runner.prometheus import exposition
from runner.proxy import families as proxy_families
from runner.queue import workqueue
from runner.reconcile import families as reconcile_families
from runner.warm import families as warm_families
from runner.watch import budget
from runner.watch import families as watch_families
from tests.operations.metrics import samples


def populated() -> runtime.Metrics:
    """One registry with a series in every family, each value fixed."""
    owner = runtime.Metrics()
    queue = workqueue.WorkQueue(base_delay=0.01, max_delay=1.0)
    queue.add(ObjectKey("ns/m"))
    owner.add_controller(name="memcached-controller", workers=2, work_queue=queue)
    owner.queue_observer("memcached-controller").queued(0.002)
    owner.queue_observer("memcached-controller").worked(1.5)
    samples.report_reconciles(owner)
    owner.observe_run(samples.MEMCACHED, failed=True, seconds=0.2, trigger="watch")
    owner.observe_run(samples.MEMCACHED, failed=False, seconds=3.0)
    owner.api_denied.labels(group="apps", resource="deployments", verb="patch").inc()
    owner.webhook_started("/validate")
    owner.webhook_finished("/validate", code=200, seconds=0.04)
    owner.webhook_started("/mutate")
    owner.add(proxy_families.RequestCount(lambda: 1234567))
    owner.add(
        reconcile_families.KindGauges(
            depth=lambda: {samples.MEMCACHED: 1}, in_flight=lambda: {samples.MEMCACHED: 0}
        )
    )
    owner.add(
        watch_families.InformerGauges(
            lambda: [
                (samples.MEMCACHED, budget.Held(objects=3, bytes=4096)),
                (samples.PROBE, budget.Held(1, 10)),
            ]
        )
    )
    owner.add(
        warm_families.LauncherCollector(
            memory=lambda: 123456789,
            running=lambda: 2,
            outcomes=lambda: {"warm": 5, "cold": 1},
            recycles=lambda: {"runs": 1, "rss": 0},
        )
    )
    owner.add(
        sharding_families.ShardCollector(
            owned=lambda: 7,
            members=lambda: 3,
            handovers=lambda: {"acquired": 2},
            view_changes=lambda: 4,
        )
    )
    owner.apply_custom(
        {"name": "role_things", "description": 'a "quoted"\nhelp', "counter": {"add": 2}}
    )
    owner.apply_custom({"name": "role_level", "description": "d", "gauge": {"set": 0.5}})
    owner.apply_custom({"name": "role_seconds", "description": "d", "histogram": {"observe": 0.3}})
    owner.apply_custom({"name": "role_sizes", "description": "d", "summary": {"observe": 4}})
    return owner


def test_every_family_is_written_as_before() -> None:
    seen = exposition.exposition(populated().registry).decode()
    seen = "\n".join(
        line for line in seen.splitlines() if not line.startswith("playbook_operator_build_info")
    )
    expected = samples.GOLDEN.read_text()
    diff = "\n".join(
        difflib.unified_diff(
            expected.splitlines(), seen.splitlines(), "golden", "seen", lineterm=""
        )
    )
    assert seen == expected, f"expected the golden exposition, saw:\n{diff}"


@pytest.mark.parametrize(
    "family",
    [
        pytest.param("playbook_operator_build_info", id="build-info"),
        pytest.param("controller_runtime_webhook_requests_in_flight", id="webhook"),
        pytest.param("playbook_operator_warm_launcher_recycles_total", id="warm"),
        pytest.param("playbook_operator_shard_handovers_total", id="sharding"),
    ],
)
def test_each_family_is_on_the_one_registry(family: str) -> None:
    text = exposition.exposition(populated().registry).decode()
    assert f"# TYPE {family} " in text, f"expected family {family} in:\n{text}"
