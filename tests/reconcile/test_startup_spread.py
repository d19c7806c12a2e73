"""Which CRs wait after a restart, and when they run (runner.reconcile.startup), with fakes:
the children's reads are a dict, the jitter a seeded random source, the watch's inputs
fixed digests (their changes: tests/reconcile/test_startup_evidence.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from runner.kube.types import GVK, KubeObject
from runner.reconcile import startup

CM = GVK("", "v1", "ConfigMap")
DEPLOY = GVK("apps", "v1", "Deployment")
INPUTS = {"content": "sha256:c", "watch": "sha256:w", "runtime": "sha256:r"}


def child(gvk: GVK, name: str, *, uid: str = "c1", rv: str = "5", gen: int | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv}
    if gen is not None:
        meta["generation"] = gen
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": meta}


def recorded(children: list[tuple[GVK, KubeObject]]) -> dict[str, Any] | None:
    seen = startup.Children().for_watch(lambda: INPUTS)
    seen.begin("owner")
    for gvk, obj in children:
        seen.saw("owner", gvk=gvk, obj=obj)
    return startup.record(seen.take("owner"))


def cr(
    *,
    successful: str = "True",
    generation: int = 2,
    observed: int = 2,
    kept: dict[str, Any] | None = None,
) -> KubeObject:
    status: dict[str, Any] = {
        "observedGeneration": observed,
        "conditions": [{"type": "Successful", "status": successful}],
    }
    if kept is not None:
        status[startup.STATUS_FIELD] = kept
    return {
        "metadata": {"name": "m", "namespace": "ns", "generation": generation},
        "status": status,
    }


SETTLED = [(CM, child(CM, "m-echo")), (DEPLOY, child(DEPLOY, "m", uid="d1", gen=3))]


def reader(live: dict[str, KubeObject]) -> startup.Reader:
    return lambda c, _owner: live.get(c.name)


def spread(live: dict[str, KubeObject], *, window: float = 100, rate: float = 1) -> startup.Spread:
    spreader = startup.Spread(window=window, rate=rate, read=reader(live), rng=random.Random(7))
    return spreader.for_watch(lambda: INPUTS)


LIVE = {"m-echo": child(CM, "m-echo"), "m": child(DEPLOY, "m", uid="d1", rv="99", gen=3)}


@pytest.mark.parametrize(
    ("obj", "live"),
    [
        pytest.param(cr(successful="False", kept=recorded(SETTLED)), LIVE, id="not-successful"),
        pytest.param(cr(generation=3, kept=recorded(SETTLED)), LIVE, id="generation-ahead"),
        pytest.param(cr(), LIVE, id="no-record"),
        pytest.param(cr(kept=recorded(SETTLED)), {"m": LIVE["m"]}, id="child-deleted-while-away"),
        pytest.param(
            cr(kept=recorded(SETTLED)),
            {**LIVE, "m-echo": child(CM, "m-echo", rv="6")},
            id="child-without-generation-changed",
        ),
        pytest.param(
            cr(kept=recorded(SETTLED)),
            {**LIVE, "m": child(DEPLOY, "m", uid="d1", gen=4)},
            id="child-spec-changed",
        ),
        pytest.param(
            cr(kept=recorded(SETTLED)),
            {**LIVE, "m": child(DEPLOY, "m", uid="d2", gen=3)},
            id="child-recreated",
        ),
        pytest.param(
            cr(kept={"digest": "x", "objects": ["no-slashes"]}), LIVE, id="record-not-ours"
        ),
    ],
)
def test_runs_at_once(obj: KubeObject, live: dict[str, KubeObject]) -> None:
    got = spread(live).delay(obj)
    assert got is None, f"expected no delay (run at once), got {got}"


def test_an_unchanged_cr_waits_past_the_floor_within_the_window() -> None:
    # The Deployment's status moved (resourceVersion 5 → 99): not a change.
    got = spread(LIVE).delay(cr(kept=recorded(SETTLED)))
    assert got is not None and 10.0 <= got <= 100.0, f"expected a delay in [10, 100], got {got}"


def test_a_window_of_zero_defers_nothing() -> None:
    got = spread(LIVE, window=0).delay(cr(kept=recorded(SETTLED)))
    assert got is None, f"expected no delay with window 0, got {got}"


def test_a_failing_read_runs_at_once() -> None:
    def broken(_: startup.Child, _owner: KubeObject) -> KubeObject | None:
        raise OSError("connection refused")

    spreader = startup.Spread(window=100, rate=1, read=broken).for_watch(lambda: INPUTS)
    assert spreader.delay(cr(kept=recorded(SETTLED))) is None


def test_the_rate_cap_gives_each_second_one_start_and_overflows_past_the_window() -> None:
    spreader = spread(LIVE, window=20, rate=1)  # 18 one-second slots after a 2 s floor
    delays = [spreader.delay(cr(kept=recorded(SETTLED))) for _ in range(20)]
    assert all(d is not None for d in delays)
    seconds = sorted(int(d) for d in delays if d is not None)
    assert len(set(seconds)) == 20, f"expected one start per second, saw {seconds}"
    assert min(seconds) >= 2 and max(seconds) == 21, f"expected 2..21 (2 overflow), {seconds}"


def test_too_many_children_leave_no_record() -> None:
    many = [(CM, child(CM, f"c{i}", uid=f"u{i}")) for i in range(startup.MAX_RECORDED + 1)]
    assert recorded(many) is None


def test_only_runs_in_progress_are_tracked() -> None:
    seen = startup.Children()
    seen.saw("other", gvk=CM, obj=child(CM, "stray"))
    assert seen.take("other") == {}, "a sighting outside a run must not be kept"
