"""One malformed object never blinds an informer.

A real :class:`runner.watch.source.Informer` and client against a stand-in API server
(tests/watch/source/stub_api.py) whose LIST or watch stream holds an object nested
deeper than ``json.loads`` decodes, or an object a handler chokes on. The
others must keep flowing, the list must sync, the resourceVersion must move
past the bad object, and the bad one is named once.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from runner.watch.predicate import Event
from testkit.helpers import wait_for
from tests.watch.source.conftest import RunInformer
from tests.watch.source.stub_api import StubApi

DEPTHS = [pytest.param(1000, id="1000-deep"), pytest.param(10000, id="10000-deep")]


def nested(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def obj(name: str, rv: str, *, spec: str = '{"size":1}', namespace: str = "ns") -> str:
    return (
        f'{{"metadata":{{"name":"{name}","namespace":"{namespace}","uid":"uid-{name}",'
        f'"resourceVersion":"{rv}","generation":1}},"spec":{spec}}}'
    )


def listing(*items: str, rv: str) -> bytes:
    return f'{{"metadata":{{"resourceVersion":"{rv}"}},"items":[{",".join(items)}]}}'.encode()


def line(kind: str, item: str) -> bytes:
    return f'{{"type":"{kind}","object":{item}}}'.encode()


class Seen:
    """What the handler was given, by object name; optionally raising on some names."""

    def __init__(self, *, raise_on: frozenset[str] = frozenset()) -> None:
        self.events: list[tuple[str, str]] = []
        self._raise_on = raise_on

    def __call__(self, event: Event) -> None:
        name = str(event.obj["metadata"]["name"])
        self.events.append((event.type.value, name))
        if name in self._raise_on:
            raise KeyError("ownerReferences")  # as an owner lookup meeting a weird object

    def names(self) -> list[str]:
        return [name for _, name in self.events]


@pytest.mark.parametrize("levels", DEPTHS)
def test_list_with_a_deep_object_still_syncs_the_others(
    levels: int, run_informer: RunInformer
) -> None:
    body = listing(obj("a", "5"), obj("deep", "6", spec=nested(levels)), obj("c", "7"), rv="10")
    after = [line("ADDED", obj("d", "11"))]
    with StubApi(list_body=body, watches={"10": after}) as api:
        seen = Seen()
        informer = run_informer(api, seen)

        wait_for(informer.synced.is_set, describe="the informer to sync", timeout=5)
        wait_for(
            seen.names, until=lambda n: "d" in n, describe="the event after the list", timeout=5
        )
        assert seen.names() == ["a", "c", "d"], f"handler saw {seen.events}"
        held = [k for k in ("ns/a", "ns/deep", "ns/c", "ns/d") if informer.get(k) is not None]  # type: ignore[arg-type]
        assert held == ["ns/a", "ns/c", "ns/d"], f"store holds {held}"
        assert api.lists == 1, f"expected one LIST, saw {api.lists}"


@pytest.mark.parametrize("levels", DEPTHS)
@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED", "DELETED"])
def test_watch_event_with_a_deep_object_is_skipped_and_the_version_moves_on(
    levels: int, kind: str, run_informer: RunInformer
) -> None:
    stream = [line(kind, obj("deep", "11", spec=nested(levels))), line("ADDED", obj("e", "12"))]
    with StubApi(list_body=listing(obj("a", "5"), rv="10"), watches={"10": stream}) as api:
        seen = Seen()
        informer = run_informer(api, seen)

        wait_for(
            seen.names, until=lambda n: "e" in n, describe="the event after the deep one", timeout=5
        )
        assert seen.names() == ["a", "e"], f"handler saw {seen.events}"
        assert api.watch_versions == ["10"], f"watches opened at {api.watch_versions}"
        assert informer._resource_version == "12", informer._resource_version


def test_a_handler_raising_on_one_event_stops_nothing(run_informer: RunInformer) -> None:
    stream = [line("ADDED", obj("odd", "11")), line("ADDED", obj("e", "12"))]
    with StubApi(list_body=listing(obj("a", "5"), rv="10"), watches={"10": stream}) as api:
        seen = Seen(raise_on=frozenset({"odd"}))
        run_informer(api, seen)

        wait_for(
            seen.names, until=lambda n: "e" in n, describe="the event after the odd one", timeout=5
        )
        assert seen.names() == ["a", "odd", "e"], f"handler saw {seen.events}"
        assert api.watch_versions == ["10"], f"watches opened at {api.watch_versions}"


def test_rejected_objects_are_reported_once_per_version(
    run_informer: RunInformer, caplog: pytest.LogCaptureFixture
) -> None:
    deep = nested(1000)
    body = listing(obj("a", "5"), obj("deep", "6", spec=deep), rv="10")
    # The same object again (its status written: new rv, same generation), then deleted.
    stream = [
        line("MODIFIED", obj("deep", "11", spec=deep)),
        line("DELETED", obj("deep", "12", spec=deep)),
        line("ADDED", obj("e", "13")),
    ]
    rejected: list[Any] = []  # decode.Rejected
    with StubApi(list_body=body, watches={"10": stream}) as api:
        seen = Seen()
        with caplog.at_level(logging.DEBUG, logger="tests.watch.source"):
            run_informer(api, seen, on_rejected=rejected.append)
            wait_for(
                seen.names,
                until=lambda n: "e" in n,
                describe="the event after the deep ones",
                timeout=5,
            )

    versions = [r.obj["metadata"]["resourceVersion"] for r in rejected]
    assert versions == ["6", "11"], f"on_rejected heard versions {versions} (not of deletions)"
    assert "nesting 1001 levels deep" in rejected[0].reason, rejected[0].reason
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, f"expected one error log, saw {[r.getMessage() for r in errors]}"
    named = errors[0].__dict__
    assert (named["kind"], named["object"], named["resourceVersion"]) == ("Probe", "ns/deep", "6")
    assert "nesting 1001 levels deep" in named["reason"], named


def test_last_activity_moves_with_watch_events(run_informer: RunInformer) -> None:
    stream = [line("BOOKMARK", '{"metadata":{"resourceVersion":"11"}}')]
    with StubApi(list_body=listing(obj("a", "5"), rv="10"), watches={"10": stream}) as api:
        started = time.monotonic()
        informer = run_informer(api, Seen())
        wait_for(lambda: api.sent_at.get("10"), describe="the bookmark to be sent", timeout=5)
        wait_for(
            informer.last_activity,
            until=lambda t: t >= api.sent_at["10"] > started,
            describe=f"last_activity at or after the bookmark ({api.sent_at['10']:.3f})",
            timeout=5,
        )
