"""Informers stream their initial lists from the embedded cluster's API server (WatchList).

Integration test: the real API server (1.36) sends each ConfigMap of a namespace as an
ADDED event and ends with the bookmark annotated ``k8s.io/initial-events-end``; the
informer holds exactly what a LIST would, never falls back to pages, and goes on
watching from the bookmark. tests/watch/source/test_initial.py covers the fallbacks.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK, ObjectKey, Resource
from runner.watch import source
from testkit.helpers import wait_for

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")
CONFIGMAPS = Resource(
    gvk=CONFIGMAP,
    plural="configmaps",
    namespaced=True,
    verbs=frozenset({"list", "watch", "get"}),
    subresources=frozenset(),
)
COUNT = 30


def _configmap(name: str, namespace: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"n": name}}


def test_an_informer_streams_its_list_and_watches_on(kube: Client, namespace: str) -> None:
    for i in range(COUNT):
        kube.create(CONFIGMAP, _configmap(f"cm-{i}", namespace), namespace=namespace)
    seen: list[str] = []
    stop = threading.Event()
    informer = source.Informer(
        client=kube,
        resource=CONFIGMAPS,
        namespace=namespace,
        handler=lambda event: seen.append(str(event.obj["metadata"]["name"])),
        log=logging.getLogger("tests.watch.streamed"),
    )
    threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
    try:
        wait_for(informer.synced.is_set, describe="the informer to sync", timeout=30)
        assert informer.streams_lists, (
            "expected the API server to stream the list (WatchList); the informer fell back "
            "to LIST pages"
        )
        listed = {
            cm["metadata"]["name"] for cm in kube.list(CONFIGMAP, namespace=namespace)["items"]
        }
        held = {
            name for name in listed if informer.get(ObjectKey(f"{namespace}/{name}")) is not None
        }
        assert held == listed and len(listed) >= COUNT, (
            f"expected the informer to hold what a LIST holds ({len(listed)}), held {len(held)}"
        )
        kube.create(CONFIGMAP, _configmap("after", namespace), namespace=namespace)
        wait_for(lambda: seen, until=lambda s: "after" in s, describe="the watch after the list")
        assert seen.count("cm-0") == 1, f"cm-0 reached the handler {seen.count('cm-0')} times"
    finally:
        stop.set()
