"""operator-sdk's event filters: what triggers a reconcile and what does not."""

from __future__ import annotations

from typing import Any

import pytest

from runner.watch import predicate
from runner.watch.predicate import Event, EventType


def obj(
    *, generation: int | None = 1, labels: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "a",
        "namespace": "ns",
        "resourceVersion": "1",
        "labels": labels or {},
    }
    if generation is not None:
        meta["generation"] = generation
    meta.update(extra.pop("meta", {}))
    return {"metadata": meta, "spec": {"size": 1}, **extra}


def modified(old: dict[str, Any], new: dict[str, Any]) -> Event:
    return Event(EventType.MODIFIED, new, old=old)


ALL = predicate.primary(watch_annotations=False, selector_matches=lambda labels: True)
WITH_ANNOTATIONS = predicate.primary(watch_annotations=True, selector_matches=lambda labels: True)
GOLD_ONLY = predicate.primary(
    watch_annotations=False, selector_matches=lambda labels: labels.get("tier") == "gold"
)


@pytest.mark.parametrize(
    ("accept", "event", "expected"),
    [
        pytest.param(ALL, Event(EventType.ADDED, obj()), True, id="create"),
        pytest.param(ALL, Event(EventType.DELETED, obj()), True, id="delete"),
        pytest.param(
            ALL,
            modified(obj(generation=1), obj(generation=2, spec={"size": 2})),
            True,
            id="spec-change",
        ),
        pytest.param(
            ALL,
            modified(obj(generation=1), obj(generation=2, status={"x": 1})),
            False,
            id="status-bumps-generation-without-subresource",
        ),
        pytest.param(ALL, modified(obj(), obj(status={"x": 1})), False, id="status-only"),
        pytest.param(ALL, modified(obj(), obj(labels={"l": "v"})), False, id="label-only"),
        pytest.param(
            ALL,
            modified(obj(generation=None), obj(generation=None, data={"k": "v"})),
            True,
            id="no-generation-kind",
        ),
        pytest.param(
            ALL,
            modified(obj(), obj(meta={"annotations": {"a": "b"}})),
            False,
            id="annotation-ignored-by-default",
        ),
        pytest.param(
            WITH_ANNOTATIONS,
            modified(obj(), obj(meta={"annotations": {"a": "b"}})),
            True,
            id="annotation-watched",
        ),
        pytest.param(
            ALL,
            modified(obj(), obj(meta={"deletionTimestamp": "2026-01-01T00:00:00Z"})),
            True,
            id="deletion-started",
        ),
        pytest.param(GOLD_ONLY, Event(EventType.ADDED, obj()), False, id="selector-rejects"),
        pytest.param(
            GOLD_ONLY,
            Event(EventType.ADDED, obj(labels={"tier": "gold"})),
            True,
            id="selector-accepts",
        ),
    ],
)
def test_primary(accept: predicate.Predicate, event: Event, expected: bool) -> None:
    assert accept(event) is expected, f"expected {expected} for {event}"


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param(Event(EventType.ADDED, obj()), False, id="create-ignored"),
        pytest.param(Event(EventType.DELETED, obj()), True, id="delete"),
        pytest.param(modified(obj(), obj(status={"readyReplicas": 1})), False, id="status-only"),
        pytest.param(
            modified(obj(), obj(meta={"resourceVersion": "2", "managedFields": [{}]})),
            False,
            id="rv-and-managed-fields",
        ),
        pytest.param(
            modified(obj(generation=1), {**obj(generation=2), "spec": {"size": 3}}),
            True,
            id="scaled",
        ),
        pytest.param(modified(obj(), obj(labels={"x": "y"})), True, id="labels-changed"),
        pytest.param(
            modified(obj(), obj(meta={"annotations": {"deployment.kubernetes.io/revision": "1"}})),
            False,
            id="revision-annotation",
        ),
        pytest.param(
            modified(
                obj(meta={"annotations": {"team": "a"}}),
                obj(meta={"annotations": {"team": "a", "kubernetes.io/change-cause": "x"}}),
            ),
            False,
            id="kubernetes-io-annotation",
        ),
        pytest.param(
            modified(
                obj(meta={"annotations": {"team": "a", "deployment.kubernetes.io/revision": "1"}}),
                obj(meta={"annotations": {"deployment.kubernetes.io/revision": "1"}}),
            ),
            True,
            id="own-annotation-removed",
        ),
        pytest.param(
            modified(obj(), obj(meta={"annotations": {"notkubernetes.io/x": "1"}})),
            True,
            id="lookalike-domain",
        ),
    ],
)
def test_dependent(event: Event, expected: bool) -> None:
    assert predicate.dependent(event) is expected, f"expected {expected} for {event}"
