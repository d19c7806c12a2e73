"""An informer's initial read: a streamed list (WatchList) where the API server offers
it, LIST pages where it refuses, and a fresh start when a stream ends half-read.

Against a stand-in API server (stub_api.py); tests/watch/test_streamed_lists.py reads
real kinds from the embedded cluster's API server this way.
"""

from __future__ import annotations

from runner.kube.types import ObjectKey
from runner.watch import budget
from testkit.helpers import wait_for
from tests.watch.source.conftest import RunInformer
from tests.watch.source.stub_api import Seen, StubApi, line, listing, obj


def end_bookmark(rv: str) -> bytes:
    annotations = {"k8s.io/initial-events-end": "true"}
    mark = {"kind": "Probe", "metadata": {"resourceVersion": rv, "annotations": annotations}}
    return line("BOOKMARK", mark)


def test_a_streamed_list_fills_the_store_and_the_watch_goes_on_from_its_bookmark(
    run_informer: RunInformer,
) -> None:
    initial = [line("ADDED", obj("a", "5")), line("ADDED", obj("b", "6")), end_bookmark("10")]
    with StubApi(
        list_body=listing(rv="1"), watches={"10": [line("ADDED", obj("c", "11"))]}, initial=initial
    ) as api:
        seen = Seen()
        informer = run_informer(api, seen)
        wait_for(informer.synced.is_set, describe="the informer to sync", timeout=5)
        wait_for(seen.names, until=lambda n: "c" in n, describe="c after the list")
        assert seen.names() == ["a", "b", "c"], f"handler saw {seen.names()}"
        assert api.lists == 0, f"expected no LIST (the list was streamed), saw {api.lists}"
        assert api.streamed_lists == 1 and api.watch_versions[:1] == ["10"], (
            f"expected one streamed list, then a watch from its bookmark's 10; saw "
            f"{api.streamed_lists} streamed, watches from {api.watch_versions}"
        )


def test_a_server_that_refuses_streamed_lists_is_read_in_pages(run_informer: RunInformer) -> None:
    body = listing(obj("a", "5"), rv="10")
    with StubApi(list_body=body, watches={"10": [line("ADDED", obj("b", "11"))]}) as api:
        seen = Seen()
        informer = run_informer(api, seen)
        wait_for(seen.names, until=lambda n: "b" in n, describe="b after the list")
        assert seen.names() == ["a", "b"], f"handler saw {seen.names()}"
        assert api.lists == 1, f"expected the LIST after the refused stream, saw {api.lists}"
        assert informer.synced.is_set()


def test_a_stream_that_ends_half_read_starts_over_in_pages(run_informer: RunInformer) -> None:
    """More than a batch arrived, then no end bookmark: what was read is not a list."""
    streamed = [line("ADDED", obj(f"s{i}", str(100 + i))) for i in range(budget.PAGE + 1)]
    body = listing(obj("a", "5"), rv="10")
    with StubApi(list_body=body, watches={"10": []}, initial=streamed) as api:
        seen = Seen()
        informer = run_informer(api, seen)
        wait_for(informer.synced.is_set, describe="the informer to sync", timeout=10)
        assert api.streamed_lists == 1 and api.lists == 1, (
            f"expected one streamed list, then one LIST; saw {api.streamed_lists} and {api.lists}"
        )
        names = ("a", "s0", f"s{budget.PAGE}")
        held = [name for name in names if informer.get(ObjectKey(f"ns/{name}"))]
        assert held == ["a"], f"expected only the LIST's object held, saw {held}"
        assert "s0" not in seen.names(), f"the half-read stream reached the handler: {seen.names()}"
