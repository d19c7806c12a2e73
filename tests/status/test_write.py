"""write(): read live, transition, server-side apply of status with a resourceVersion
under the operator's field manager; retry on 409."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from runner.base import errors
from runner.kube import errors as kube_errors
from runner.kube.client import APPLY_PATCH, MERGE_PATCH, Client
from runner.kube.transport import Query
from runner.kube.types import GVK, KubeObject
from runner.status import conditions
from runner.status.conditions import Condition

GVK_ = GVK("cache.example.com", "v1alpha1", "Memcached")
NOW = datetime(2024, 1, 1, tzinfo=UTC)
RUNNING = [
    {
        "type": "Running",
        "status": "True",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
        "reason": "Running",
        "message": "Running reconciliation",
    }
]


def _client_satisfies_protocol(client: Client) -> conditions.StatusClient:
    return client  # mypy proves the real client fits what write() needs


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class FakeClient:
    """An API server holding one object: GET, and PATCH with resourceVersion checks.

    A server-side apply sets the status keys it holds and removes those the same field
    manager applied before and left out (its conditions list is taken whole: without
    managedFields, write() sends the whole merged list). A merge patch merges."""

    def __init__(self, obj: KubeObject | None) -> None:
        self.obj = obj
        self.gets = 0
        self.patches: list[dict[str, Any]] = []
        # Runs after each GET, to play another writer racing us.
        self.after_get: Callable[[KubeObject], None] = lambda obj: None
        self.vanish_on_patch = False
        self.status_subresource = True  # False: a CRD without one (status via the object)
        self.queries: list[Query | None] = []
        self.applied: dict[str, set[str]] = {}  # field manager → status keys it applied

    def _not_found(self, method: str) -> kube_errors.NotFoundError:
        return kube_errors.NotFoundError(status=404, method=method, path="/x", body={})

    def get(self, gvk: GVK, *, name: str, namespace: str | None = None) -> KubeObject:
        self.gets += 1
        if self.obj is None:
            raise self._not_found("GET")
        seen = copy.deepcopy(self.obj)
        self.after_get(self.obj)
        return seen

    def patch(
        self,
        gvk: GVK,
        *,
        name: str,
        namespace: str | None = None,
        body: Any,
        content_type: str = MERGE_PATCH,
        subresource: str = "",
        query: Query | None = None,
    ) -> KubeObject:
        expected = "status" if self.status_subresource else ""
        self.patches.append(copy.deepcopy(body))
        self.queries.append(query)
        if self.vanish_on_patch:
            self.obj = None
        if self.obj is None or subresource != expected:
            raise self._not_found("PATCH")
        current = self.obj["metadata"]["resourceVersion"]
        if body["metadata"]["resourceVersion"] != current:
            raise kube_errors.ConflictError(status=409, method="PATCH", path="/x", body={})
        before = copy.deepcopy(self.obj.get("status"))
        if content_type == APPLY_PATCH:
            manager = str((query or {}).get("fieldManager"))
            status = dict(self.obj.get("status") or {})
            for key in self.applied.get(manager, set()) - set(body["status"]):
                status.pop(key, None)
            status.update(copy.deepcopy(body["status"]))
            self.applied[manager] = set(body["status"])
            self.obj["status"] = status
        else:
            self.obj = merge(self.obj, {"status": body["status"]})
        if not self.status_subresource and self.obj.get("status") != before:
            # The API server bumps a CRD's generation on any change but metadata when it
            # has no status subresource.
            self.obj["metadata"]["generation"] += 1
        bump(self.obj)
        return copy.deepcopy(self.obj)


def bump(obj: KubeObject) -> None:
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)


def cr(status_: dict[str, Any] | None = None, *, rv: str = "7") -> KubeObject:
    obj: KubeObject = {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "metadata": {"name": "mc", "namespace": "ns", "resourceVersion": rv, "generation": 2},
        "spec": {"size": 3},
    }
    if status_ is not None:
        obj["status"] = status_
    return obj


def mark_running(current: list[Condition]) -> list[Condition]:
    return conditions.mark_running(current, now=NOW)


def write(client: FakeClient, *, observed_generation: int | None = 2, retries: int = 5) -> Any:
    return conditions.write(
        client,
        gvk=GVK_,
        namespace="ns",
        name="mc",
        conditions_update=mark_running,
        observed_generation=observed_generation,
        retries=retries,
    )


def test_patch_holds_resource_version_conditions_and_generation_only() -> None:
    client = FakeClient(cr({"nodes": ["mc-0"], "conditions": []}))
    updated = write(client)
    assert client.patches == [
        {
            "apiVersion": "cache.example.com/v1alpha1",
            "kind": "Memcached",
            "metadata": {"name": "mc", "namespace": "ns", "resourceVersion": "7"},
            "status": {"conditions": RUNNING, "observedGeneration": 2},
        }
    ], "expected one server-side apply holding only the runtime's status keys"
    assert client.queries == [{"fieldManager": "playbook-operator", "force": "true"}], (
        f"expected the apply under the operator's field manager, forced, saw {client.queries}"
    )
    assert updated["status"] == {"nodes": ["mc-0"], "conditions": RUNNING, "observedGeneration": 2}


@pytest.mark.parametrize(
    ("live_status", "observed_generation", "patched"),
    [
        pytest.param(
            {"conditions": RUNNING, "observedGeneration": 2}, 2, False, id="nothing-changed"
        ),
        pytest.param({"conditions": RUNNING}, None, False, id="no-generation-to-record"),
        pytest.param(
            {"conditions": RUNNING, "observedGeneration": 1}, 2, True, id="generation-moved"
        ),
        pytest.param({"conditions": []}, None, True, id="conditions-changed"),
        pytest.param(
            {"conditions": ["junk", *RUNNING]}, None, True, id="non-object-entries-dropped"
        ),
    ],
)
def test_write_is_skipped_when_the_patch_would_change_nothing(
    live_status: dict[str, Any], observed_generation: int | None, patched: bool
) -> None:
    client = FakeClient(cr(copy.deepcopy(live_status)))
    updated = write(client, observed_generation=observed_generation)
    assert bool(client.patches) == patched, f"patches sent: {client.patches}"
    assert updated["status"]["conditions"] == RUNNING


def test_missing_status_is_created() -> None:
    client = FakeClient(cr())
    updated = write(client, observed_generation=None)
    assert client.patches[0]["status"] == {"conditions": RUNNING}
    assert updated["status"] == {"conditions": RUNNING}


def test_conflict_rereads_and_keeps_the_other_writers_fields() -> None:
    client = FakeClient(cr({"conditions": []}))
    raced = False

    def role_writes_nodes(obj: KubeObject) -> None:
        nonlocal raced
        if not raced:  # once: k8s_status lands between our GET and PATCH
            raced = True
            obj["status"]["nodes"] = ["mc-0"]
            bump(obj)

    client.after_get = role_writes_nodes
    updated = write(client)
    assert client.gets == 2, "a 409 must be answered by reading the object again"
    assert [p["metadata"]["resourceVersion"] for p in client.patches] == ["7", "8"]
    assert updated["status"] == {"nodes": ["mc-0"], "conditions": RUNNING, "observedGeneration": 2}


def test_conflict_transition_runs_on_the_fresh_conditions() -> None:
    client = FakeClient(cr({"conditions": []}))
    custom = {"type": "Ready", "status": "True", "reason": "Up", "message": ""}

    def add_custom_once(obj: KubeObject) -> None:
        if not obj["status"]["conditions"]:
            obj["status"]["conditions"] = [custom]
            bump(obj)

    client.after_get = add_custom_once
    updated = write(client)
    assert updated["status"]["conditions"] == [custom, *RUNNING]


def test_persistent_conflict_gives_up_after_retries() -> None:
    client = FakeClient(cr({"conditions": []}))
    client.after_get = bump
    with pytest.raises(errors.ReconcileError, match="after 3 retries") as caught:
        write(client, retries=3)
    assert isinstance(caught.value.__cause__, kube_errors.ConflictError)
    assert (client.gets, len(client.patches)) == (4, 4), "one try plus three retries"


@pytest.mark.parametrize(
    ("obj", "vanish_on_patch", "patches"),
    [
        pytest.param(None, False, 0, id="gone-before-read"),
        pytest.param(cr({"conditions": []}), True, 1, id="gone-before-patch"),
    ],
)
def test_deleted_object_returns_none(
    obj: KubeObject | None, vanish_on_patch: bool, patches: int
) -> None:
    client = FakeClient(obj)
    client.vanish_on_patch = vanish_on_patch
    assert write(client) is None
    assert len(client.patches) == patches


def _memcached(rv: str, conditions: list[Condition]) -> KubeObject:
    return {
        "metadata": {"name": "m", "namespace": "ns", "resourceVersion": rv, "generation": 1},
        "status": {"conditions": copy.deepcopy(conditions)},
    }


def test_write_from_a_current_copy_skips_the_read() -> None:
    client = FakeClient(_memcached("5", RUNNING))
    written = conditions.write(
        client,
        gvk=GVK_,
        namespace="ns",
        name="m",
        conditions_update=lambda c: conditions.mark_running(c, now=NOW),
        observed_generation=None,
        current=_memcached("5", RUNNING),
    )
    assert client.gets == 0, f"expected no GET with a current copy, saw {client.gets}"
    assert len(client.patches) == 1, "a write from a copy is never skipped as a no-op"
    assert written is not None


def test_write_from_a_stale_copy_rereads_after_the_conflict() -> None:
    client = FakeClient(_memcached("7", RUNNING))
    conditions.write(
        client,
        gvk=GVK_,
        namespace="ns",
        name="m",
        conditions_update=lambda c: conditions.mark_running(c, now=NOW),
        observed_generation=None,
        current=_memcached("5", []),  # older than the server's rv 7
    )
    assert client.gets == 1, f"expected one re-read after the 409, saw {client.gets}"
    assert client.obj is not None
    assert client.obj["status"]["conditions"][0]["type"] == "Running"


@pytest.mark.parametrize(
    "current",
    [pytest.param(None, id="fresh-read"), pytest.param("stale-copy", id="after-a-conflict")],
)
def test_a_write_pinned_to_a_uid_never_lands_on_a_recreated_object(current: str | None) -> None:
    old = cr({"conditions": []}, rv="5")
    old["metadata"]["uid"] = "uid-old"
    new = cr({"conditions": []}, rv="9")
    new["metadata"]["uid"] = "uid-new"
    new["metadata"]["generation"] = 1
    client = FakeClient(new)
    written = conditions.write(
        client,
        gvk=GVK_,
        namespace="ns",
        name="mc",
        conditions_update=mark_running,
        observed_generation=2,
        uid="uid-old",
        current=old if current else None,
    )
    assert written is None, f"expected None (our object is gone), saw {written}"
    assert client.obj is not None
    assert client.obj["status"] == {"conditions": []}, (
        f"the re-created object's status must stay untouched, saw {client.obj['status']}"
    )


def test_a_404_from_the_status_subresource_of_an_object_that_is_there_is_not_gone() -> None:
    client = FakeClient(cr({"conditions": []}))
    client.status_subresource = False
    with pytest.raises(errors.StatusSubresourceMissing):
        write(client)


def test_status_through_the_object_observes_the_generation_its_own_write_makes() -> None:
    client = FakeClient(cr({"conditions": []}))
    client.status_subresource = False
    seen = copy.deepcopy(client.obj)
    assert seen is not None
    for _ in range(2):  # Running, then (say) Successful: each bumps the generation
        written = conditions.write(
            client,
            gvk=GVK_,
            namespace="ns",
            name="mc",
            conditions_update=mark_running if _ == 0 else (lambda c: [*c, {"type": "X"}]),
            observed_generation=2,
            subresource="",
            seen=seen,
        )
        assert written is not None
        meta, status_ = written["metadata"], written["status"]
        assert status_["observedGeneration"] == meta["generation"], (
            f"expected observedGeneration to follow the generation the write made; "
            f"generation {meta['generation']}, observed {status_['observedGeneration']}"
        )
    assert client.obj is not None and client.obj["metadata"]["generation"] == 4


def test_status_through_the_object_keeps_the_runs_generation_when_the_spec_moved() -> None:
    client = FakeClient(cr({"conditions": []}))
    client.status_subresource = False
    seen = copy.deepcopy(client.obj)
    assert client.obj is not None and seen is not None
    client.obj["spec"] = {"size": 5}  # a user's edit after the run started
    client.obj["metadata"]["generation"] = 3
    written = conditions.write(
        client,
        gvk=GVK_,
        namespace="ns",
        name="mc",
        conditions_update=mark_running,
        observed_generation=2,
        subresource="",
        seen=seen,
    )
    assert written is not None and written["status"]["observedGeneration"] == 2, written
