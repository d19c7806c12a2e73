"""Stored objects share their repeated strings (:mod:`runner.watch.strings`).

Unit tests of the table (no cluster), and one integration test: an informer on the
real cluster stores objects that arrived in separate watch events with shared keys.
"""

from __future__ import annotations

import gc
import json
import logging
import threading
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, make_key
from runner.watch import source, strings
from testkit.helpers import wait_for

CONFIGMAP = GVK("", "v1", "ConfigMap")


def deployment(index: int) -> str:
    """A Deployment as the API server serves one (managedFields included), as JSON."""
    fields: dict[str, Any] = {
        f"f:{name}": {f"f:{sub}": {} for sub in ("replicas", "selector", "strategy", "template")}
        for name in ("spec", "metadata", "status")
    }
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"memcached-{index:05d}-memcached",
            "namespace": "soak",
            "uid": f"5f0c{index:04d}-1a2b-4c3d-8e9f-{index:012d}",
            "resourceVersion": str(100000 + index),
            "generation": 1,
            "creationTimestamp": f"2026-12-02T06:{index % 60:02d}:07Z",
            "labels": {"app": "memcached", "memcached_cr": f"memcached-{index:05d}"},
            "managedFields": [
                {
                    "manager": manager,
                    "operation": operation,
                    "apiVersion": "apps/v1",
                    "time": f"2026-12-02T06:{index % 60:02d}:08Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": fields,
                }
                for manager, operation in (("OpenAPI-Generator", "Update"), ("kcm", "Update"))
            ],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "memcached"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "memcached",
                            "image": "docker.io/memcached:1.6.38-alpine",
                            "ports": [{"containerPort": 11211, "protocol": "TCP"}],
                            "args": ["-m", "64", "-o", "modern", "-v"],
                        }
                    ]
                }
            },
        },
        "status": {
            "conditions": [
                {"type": kind, "status": "True", "reason": "MinimumReplicasAvailable"}
                for kind in ("Available", "Progressing")
            ]
        },
    }
    return json.dumps(obj)


def test_keys_and_short_values_are_one_copy_across_objects() -> None:
    table = strings.SharedStrings()
    first = table.compact(json.loads(deployment(1)), held=0)
    second = table.compact(json.loads(deployment(2)), held=1)
    assert first == json.loads(deployment(1)), "expected the object's content unchanged"
    key_a = next(k for k in first if k == "metadata")
    key_b = next(k for k in second if k == "metadata")
    assert key_a is key_b, "expected the key 'metadata' to be one string in both objects"
    image_a = first["spec"]["template"]["spec"]["containers"][0]["image"]
    image_b = second["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image_a is image_b, "expected a short value both objects hold to be one string"
    long_value = "x" * (strings.MAX_VALUE + 1)
    a = table.compact(json.loads(json.dumps({"v": long_value})), held=2)
    b = table.compact(json.loads(json.dumps({"v": long_value})), held=3)
    assert a["v"] == b["v"] and a["v"] is not b["v"], "expected long values left as they are"


def test_the_table_is_bounded_by_what_the_store_holds() -> None:
    table = strings.SharedStrings()
    largest = 0
    for index in range(3000):  # every object brings strings no other has
        table.compact({"metadata": {"uid": f"uid-{index}", "rv": f"rv-{index}"}}, held=1)
        largest = max(largest, len(table))
    assert table.emptied >= 1, "expected the table emptied once past its allowance"
    assert largest <= strings.FLOOR + 3, (
        f"expected at most {strings.FLOOR} entries (+ one object's), saw {largest}"
    )


def _size(make: Any) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        held = make()
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del held
    return size


def test_shared_objects_take_less_memory_than_decoded_ones() -> None:
    texts = [deployment(index) for index in range(300)]
    decoded = _size(lambda: [json.loads(text) for text in texts])
    table = strings.SharedStrings()
    shared = _size(lambda: [table.compact(json.loads(t), held=i) for i, t in enumerate(texts)])
    assert shared < 0.75 * decoded, (
        f"expected shared objects under 3/4 of decoded ones, saw {shared} vs {decoded} bytes"
    )


@pytest.fixture
def informer(kube: Client, namespace: str) -> Iterator[source.Informer]:
    stop = threading.Event()
    watching = source.Informer(
        client=kube,
        resource=kube.resource(CONFIGMAP),
        namespace=namespace,
        handler=lambda event: None,
        log=logging.getLogger("test.strings"),
    )
    thread = threading.Thread(target=watching.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(watching.synced.is_set, describe="the informer's first list", timeout=30)
    yield watching
    stop.set()  # the daemon thread ends with its watch stream


@pytest.mark.integration
def test_objects_from_separate_watch_events_share_their_keys(
    kube: Client, namespace: str, informer: source.Informer
) -> None:
    names = ("first", "second")
    for name in names:  # created after the list: each arrives in a watch event of its own
        body = {"metadata": {"name": name, "namespace": namespace}, "data": {"key": "value"}}
        kube.create(CONFIGMAP, body, namespace=namespace)

    def held() -> list[KubeObject]:
        found = [informer.get(make_key(namespace=namespace, name=n)) for n in names]
        return [obj for obj in found if obj is not None]

    wait_for(lambda: len(held()) == 2, describe="the informer to hold both ConfigMaps", timeout=30)
    first, second = held()
    pairs: list[tuple[str, str]] = [
        (
            next(k for k in first["data"] if k == "key"),
            next(k for k in second["data"] if k == "key"),
        ),
        (first["metadata"]["namespace"], second["metadata"]["namespace"]),
    ]
    for a, b in pairs:
        assert a is b, f"expected {a!r} stored once for both ConfigMaps, saw two copies"
