"""/metrics text as Go's Prometheus client writes it: roles' metrics keep their names."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from runner.kube.types import GVK
from runner.operations import health
from runner.operations.metrics import endpoint, runtime
from runner.prometheus import exposition
from runner.watch.predicate import Event, EventType

MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")


def lines(registry_owner: runtime.Metrics) -> list[str]:
    return exposition.exposition(registry_owner.registry).decode().splitlines()


@pytest.mark.parametrize(
    ("payloads", "present", "absent"),
    [
        pytest.param(
            [{"counter": {"increment": True}}, {"counter": {"add": 2}}],
            ["# TYPE things counter", "things 3"],
            ["things_total", "things_created"],
            id="counter-as-named",
        ),
        pytest.param(
            [{"name": "things_total", "counter": {"increment": True}}],
            ["# TYPE things_total counter", "things_total 1"],
            ["things_total_total", "things_total_created"],
            id="counter-named-total",
        ),
        pytest.param(
            [{"gauge": {"set": 5}}, {"gauge": {"decrement": True}}],
            ["# TYPE things gauge", "things 4"],
            ["things_created"],
            id="gauge",
        ),
        pytest.param(
            [{"histogram": {"observe": 0.3}}, {"histogram": {"observe": 2}}],
            [
                "# TYPE things histogram",
                'things_bucket{le="0.25"} 0',
                'things_bucket{le="0.5"} 1',
                'things_bucket{le="1"} 1',
                'things_bucket{le="10"} 2',
                'things_bucket{le="+Inf"} 2',
                "things_sum 2.3",
                "things_count 2",
            ],
            ["things_created", 'le="1.0"', 'le="0.75"'],
            id="histogram-with-go-default-buckets",
        ),
        pytest.param(
            [{"summary": {"observe": 4}}, {"histogram": {"observe": 1}}],
            ["# TYPE things summary", "things_sum 5", "things_count 2"],
            ["things_created", "quantile"],
            id="summary-takes-histogram-observations",
        ),
    ],
)
def test_role_metrics_keep_the_name_the_role_gave(
    payloads: list[dict[str, Any]], present: list[str], absent: list[str]
) -> None:
    owner = runtime.Metrics()
    for payload in payloads:
        owner.apply_custom({"name": "things", "description": "Things seen", **payload})
    text = lines(owner)
    missing = [line for line in present if line not in text]
    assert not missing, f"expected lines {missing} in:\n" + "\n".join(text)
    extra = [word for word in absent if any(word in line for line in text)]
    assert not extra, f"expected no {extra} in:\n" + "\n".join(text)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        pytest.param({"name": "workqueue_depth", "counter": {}}, "Duplicated", id="built-in-name"),
        pytest.param({"name": "bad-name", "gauge": {}}, "metric name", id="invalid-name"),
        pytest.param({"name": "c", "counter": {"add": -1}}, "cannot decrease", id="counter-down"),
        pytest.param({"name": "c"}, "exactly one", id="no-type"),
    ],
)
def test_bad_role_metrics_are_refused(payload: dict[str, Any], problem: str) -> None:
    owner = runtime.Metrics()
    with pytest.raises(ValueError, match=problem):
        owner.apply_custom({"description": "d", **payload})


def test_changing_a_role_metric_type_is_refused() -> None:
    owner = runtime.Metrics()
    owner.apply_custom({"name": "c", "description": "d", "counter": {"increment": True}})
    with pytest.raises(ValueError, match="another type"):
        owner.apply_custom({"name": "c", "description": "d", "gauge": {"set": 1}})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(1.0, "1", id="integral"),
        pytest.param(10.0, "10", id="ten"),
        pytest.param(0.005, "0.005", id="small"),
        pytest.param(1e-8, "1e-08", id="tiny"),
        pytest.param(123456.0, "123456", id="six-digits"),
        pytest.param(1e6, "1e+06", id="million"),
        pytest.param(1700000000.0, "1.7e+09", id="unix-time"),
        pytest.param(-2.5, "-2.5", id="negative"),
        pytest.param(0.0, "0", id="zero"),
        pytest.param(float("inf"), "+Inf", id="infinity"),
        pytest.param(float("nan"), "NaN", id="nan"),
    ],
)
def test_numbers_are_written_as_go_writes_them(value: float, expected: str) -> None:
    assert exposition.go_float(value) == expected


def test_built_in_series_have_sorted_labels_and_no_created_series() -> None:
    owner = runtime.Metrics()
    owner.observe_run(MEMCACHED, failed=True, seconds=0.2)
    owner.reconciled(
        controller="memcached-controller",
        gvk=MEMCACHED,
        outcome="failed",
        action="error",
        seconds=0.3,
    )
    text = lines(owner)
    gvk = 'GVK="cache.example.com/v1alpha1, Kind=Memcached"'
    expected = [
        f'ansible_operator_reconcile_result{{{gvk},result="failed"}} 1',
        f'ansible_operator_reconciles_bucket{{{gvk},le="0.25"}} 1',
        'controller_runtime_reconcile_total{controller="memcached-controller",result="error"} 1',
        'controller_runtime_reconcile_errors_total{controller="memcached-controller"} 1',
        'controller_runtime_reconcile_time_seconds_bucket{controller="memcached-controller",'
        'le="0.3"} 1',
        "# TYPE controller_runtime_reconcile_total counter",
        'playbook_operator_reconcile_total{group="cache.example.com",kind="Memcached",'
        'result="failed",version="v1alpha1"} 1',
    ]
    missing = [line for line in expected if line not in text]
    assert not missing, f"expected lines {missing} in:\n" + "\n".join(text)
    created = [line for line in text if "_created" in line]
    assert not created, f"expected no _created series, saw {created}"


def test_resource_created_at_follows_the_primary_events() -> None:
    owner = runtime.Metrics()
    obj = {
        "metadata": {
            "name": "m",
            "namespace": "ns",
            "creationTimestamp": "2024-05-06T07:08:09Z",
        }
    }
    series = (
        'resource_created_at_seconds{group="cache.example.com",kind="Memcached",name="m",'
        'namespace="ns",version="v1alpha1"} 1.714979289e+09'
    )
    owner.matched(gvk=MEMCACHED, event=Event(EventType.ADDED, obj))
    assert series in lines(owner), "\n".join(lines(owner))
    owner.matched(gvk=MEMCACHED, event=Event(EventType.DELETED, obj))
    left = [line for line in lines(owner) if line.startswith("resource_created_at_seconds")]
    assert not left, f"expected the series removed with the object, saw {left}"


@pytest.fixture
def custom_url() -> Iterator[tuple[str, runtime.Metrics]]:
    owner = runtime.Metrics()
    server = health.serve(
        ("127.0.0.1", 0), handler=endpoint.custom_handler(owner), name="custom-metrics"
    )
    yield f"http://127.0.0.1:{server.server_port}/metrics", owner
    server.shutdown()


def post(url: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return int(answer.status), json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def test_the_custom_endpoint_answers_400_with_the_reason(
    custom_url: tuple[str, runtime.Metrics],
) -> None:
    url, owner = custom_url
    assert post(url, {"name": "ok", "description": "d", "counter": {"increment": True}}) == (
        200,
        {"ok": True},
    )
    code, body = post(url, {"name": "ok", "description": "d", "gauge": {"set": 1}})
    assert code == 400 and "another type" in body["error"], (code, body)
    assert "ok 1" in lines(owner)
