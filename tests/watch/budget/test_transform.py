"""What the dependent informers' transform keeps of one object (pure logic, no cluster)."""

from __future__ import annotations

import pytest

from runner.kube.types import GVK, KubeObject
from runner.watch import budget, predicate
from runner.watch.predicate import Event, EventType

OWNER = GVK("cache.example.com", "v1alpha1", "Memcached")
CONFIGMAP = GVK("", "v1", "ConfigMap")
OWNED_REF = {"apiVersion": OWNER.api_version, "kind": OWNER.kind, "name": "m", "uid": "u"}


def child(kind: str = "ConfigMap", *, data: str = "v", owned: bool = True) -> KubeObject:
    meta: KubeObject = {
        "name": "c",
        "namespace": "ns",
        "resourceVersion": "1",
        "managedFields": [{"manager": "kubectl"}],
        "annotations": {budget.LAST_APPLIED: "{}", "team": "a"},
    }
    if owned:
        meta["ownerReferences"] = [OWNED_REF]
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"key": data}}


def kept(obj: KubeObject, *, whole: bool = True) -> KubeObject | None:
    keep = budget.Keep(label_selector="", whole=whole)
    return budget.transform(owner_kinds=frozenset({OWNER}), keep=keep)(obj)


@pytest.mark.parametrize(
    ("obj", "whole", "expected"),
    [
        pytest.param(child(owned=False), True, None, id="stranger-not-stored"),
        pytest.param(
            child(),
            True,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "c",
                    "namespace": "ns",
                    "resourceVersion": "1",
                    "managedFields": [{"manager": "kubectl"}],
                    "annotations": {budget.LAST_APPLIED: "{}", "team": "a"},
                    "ownerReferences": [OWNED_REF],
                },
                "data": {"key": "v"},
            },
            id="owned-whole",
        ),
    ],
)
def test_what_is_kept(obj: KubeObject, whole: bool, expected: KubeObject | None) -> None:
    assert kept(obj, whole=whole) == expected, f"expected {expected}, saw {kept(obj, whole=whole)}"


def test_a_slim_secret_holds_no_data_and_still_shows_a_change_of_it() -> None:
    before, after = kept(child("Secret"), whole=False), kept(child("Secret", data="w"), whole=False)
    assert before is not None and after is not None
    assert "data" not in before and budget.is_slim(before), f"expected a slim copy, saw {before}"
    assert budget.LAST_APPLIED not in before["metadata"]["annotations"], (
        f"expected the last-applied annotation (a copy of the data) dropped, saw {before}"
    )
    changed = Event(EventType.MODIFIED, after, old=before)
    same = Event(EventType.MODIFIED, kept(child("Secret"), whole=False) or {}, old=before)
    assert predicate.dependent(changed), "expected a data change to reach the owner"
    assert not predicate.dependent(same), "expected an unchanged Secret not to reach the owner"


def test_keep_is_whole_for_every_kind_but_secret() -> None:
    seen = {
        (gvk.kind, cache): budget.Keep.of(label_selector="", child=gvk, cache_secrets=cache).whole
        for gvk in (CONFIGMAP, budget.SECRET)
        for cache in (False, True)
    }
    expected = {
        ("ConfigMap", False): True,
        ("ConfigMap", True): True,
        ("Secret", False): False,
        ("Secret", True): True,
    }
    assert seen == expected, f"expected {expected}, saw {seen}"
