"""Which children a successful run leaves to be pruned: owned by the CR's uid, untouched."""

from __future__ import annotations

from typing import Any

import pytest

from runner.kube.types import GVK
from runner.prune import candidates
from runner.prune.candidates import Ref

CM = GVK("", "v1", "ConfigMap")
UID = "cr-uid"


def child(name: str, *, owners: list[str], deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "ownerReferences": [{"uid": uid, "kind": "Probe", "name": "p"} for uid in owners],
    }
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta}


def ref(name: str) -> Ref:
    return Ref("v1", "ConfigMap", "ns", name)


@pytest.mark.parametrize(
    ("listed", "touched", "expected"),
    [
        pytest.param([child("a", owners=[UID])], [ref("a")], [], id="touched-stays"),
        pytest.param([child("b", owners=[UID])], [ref("a")], ["b"], id="untouched-owned-goes"),
        pytest.param([child("c", owners=[])], [], [], id="not-ours-stays"),
        pytest.param([child("d", owners=["other"])], [], [], id="another-owners-stays"),
        pytest.param([child("e", owners=[UID], deleting=True)], [], [], id="being-deleted"),
        pytest.param([child("f", owners=["other", UID])], [], ["f"], id="shared-owner-still-ours"),
    ],
)
def test_stale_children(
    listed: list[dict[str, Any]], touched: list[Ref], expected: list[str]
) -> None:
    stale = candidates.stale(listed, gvk=CM, uid=UID, touched=touched)
    names = [found.name for found, _ in stale]
    assert names == expected, f"expected to prune {expected}, saw {names}"
    assert all(uid == f"uid-{found.name}" for found, uid in stale), stale


@pytest.mark.parametrize(
    ("annotations", "wanted"),
    [
        pytest.param({}, True, id="no-annotation"),
        pytest.param({candidates.ANNOTATION: "false"}, False, id="false"),
        pytest.param({candidates.ANNOTATION: " False "}, False, id="false-any-case"),
        pytest.param({candidates.ANNOTATION: "true"}, True, id="true"),
    ],
)
def test_the_annotation_turns_pruning_off_for_one_cr(
    annotations: dict[str, str], wanted: bool
) -> None:
    cr = {"metadata": {"annotations": annotations}}
    assert candidates.wanted(cr) is wanted, f"expected wanted={wanted} for {annotations}"


@pytest.mark.parametrize(
    ("gvk", "prunable"),
    [
        pytest.param(CM, True, id="configmap"),
        pytest.param(GVK("", "v1", "Event"), False, id="core-event"),
        pytest.param(GVK("events.k8s.io", "v1", "Event"), False, id="events-api-event"),
        pytest.param(GVK("", "v1", "Secret"), False, id="blacklisted"),
    ],
)
def test_events_and_blacklisted_kinds_are_never_pruned(gvk: GVK, prunable: bool) -> None:
    skip = [GVK("", "v1", "Secret")]
    assert candidates.prunable(gvk, skip=skip) is prunable, f"{gvk}: expected {prunable}"
