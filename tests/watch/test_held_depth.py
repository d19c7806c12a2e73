"""How deep an object an informer holds, and that finding out never recurses.

Unit tests, no cluster: :class:`runner.watch.strings.SharedStrings` rebuilds objects of
any depth without recursion and refuses those deeper than
:data:`runner.watch.strings.MAX_DEPTH`; :func:`runner.kube.decode.too_deep` names such
an object's depth while keeping only its top levels; and a real
:class:`runner.watch.source.Informer` against a stand-in API server
(tests/watch/source/stub_api.py) skips an object that ``json.loads`` decoded but that
nests deeper than it holds — one error line, ``on_rejected`` told with the depth, no
traceback — while the objects around it keep flowing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runner.kube import decode
from runner.watch import source, strings
from runner.watch.predicate import Event
from testkit.helpers import wait_for
from tests.watch.source.stub_api import PROBE, StubApi

LOGGER = "tests.watch.held_depth"


def nested(levels: int) -> str:
    """A JSON value of ``levels`` objects, one in the other."""
    return '{"a":' * levels + "1" + "}" * levels


def obj(name: str, rv: str, *, spec: str = '{"size":1}') -> str:
    return (
        f'{{"metadata":{{"name":"{name}","namespace":"ns","uid":"uid-{name}",'
        f'"resourceVersion":"{rv}","generation":1}},"spec":{spec}}}'
    )


def depth_of(value: Any) -> int:
    """Levels of containers in ``value`` (itself included), counted without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in (
                item.values() if isinstance(item, dict) else item
            ))  # fmt: skip
    return deepest


@contextlib.contextmanager
def low_recursion_limit() -> Iterator[None]:
    """Python's recursion limit lowered to 120 frames: a recursive walk of the objects
    below (200 levels and more) would raise RecursionError."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@pytest.mark.parametrize(
    "levels",
    [
        pytest.param(1, id="flat"),
        pytest.param(200, id="200-deep"),
        pytest.param(strings.MAX_DEPTH - 1, id="max-depth-with-the-object-itself"),
    ],
)
def test_sharing_rebuilds_what_it_holds_without_recursion(levels: int) -> None:
    built = json.loads(f'{{"metadata":{{"name":"x"}},"spec":{nested(levels)},"l":[["v"],2]}}')
    table = strings.SharedStrings()
    with low_recursion_limit():
        shared = table.compact(built, held=1)

    assert shared == built, "expected the rebuilt object equal to the decoded one"
    assert list(shared) == ["metadata", "spec", "l"], f"key order changed: {list(shared)}"
    assert depth_of(shared) == depth_of(built), (
        f"expected {depth_of(built)} levels, saw {depth_of(shared)}"
    )
    again = table.compact(json.loads(json.dumps({"spec": {"a": 1}, "l": [["v"]]})), held=1)
    assert again["l"][0][0] is shared["l"][0][0], "expected the short value 'v' shared"


@pytest.mark.parametrize(
    "levels",
    [
        pytest.param(strings.MAX_DEPTH, id="one-past-max-depth"),
        pytest.param(600, id="600-deep"),
        pytest.param(900, id="900-deep-as-json-loads-decodes"),
    ],
)
def test_sharing_refuses_deeper_than_it_holds(levels: int) -> None:
    built = json.loads(f'{{"spec":{nested(levels)}}}')  # levels + 1 with the object
    with pytest.raises(strings.TooDeepError) as raised:
        strings.SharedStrings().compact(built, held=1)
    assert raised.value.limit == strings.MAX_DEPTH, f"limit named: {raised.value.limit}"


def test_too_deep_names_the_depth_and_keeps_the_top() -> None:
    built = json.loads(
        f'{{"metadata":{{"name":"x","uid":"u"}},"spec":{nested(600)},'
        '"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
    )
    with low_recursion_limit():
        rejected = decode.too_deep(built, limit=strings.MAX_DEPTH, type="MODIFIED")

    expected = f"nesting 601 levels deep, deeper than the runtime holds ({strings.MAX_DEPTH}"
    assert rejected.reason.startswith(expected), f"expected {expected!r}…, saw {rejected.reason!r}"
    assert rejected.type == "MODIFIED", rejected.type
    assert rejected.obj["metadata"] == {"name": "x", "uid": "u"}, rejected.obj["metadata"]
    assert decode.intact(rejected.obj["status"]), "expected the status kept whole"
    assert not decode.intact(rejected.obj["spec"]), "expected the deep spec truncated"
    assert depth_of(rejected.obj) <= decode.RECOVER_DEPTH, f"kept {depth_of(rejected.obj)} levels"


class Seen:
    """The names of the objects the handler was given."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, event: Event) -> None:
        self.names.append(str(event.obj["metadata"]["name"]))


@pytest.mark.parametrize(
    "where",
    [pytest.param("list", id="in-a-list"), pytest.param("watch", id="in-a-watch-event")],
)
def test_an_informer_skips_an_object_deeper_than_it_holds(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    deep = obj("deep", "6", spec=nested(600))  # json.loads decodes it; sharing refuses it
    items = [obj("a", "5"), deep] if where == "list" else [obj("a", "5")]
    body = f'{{"metadata":{{"resourceVersion":"10"}},"items":[{",".join(items)}]}}'.encode()
    stream = [f'{{"type":"ADDED","object":{deep}}}'.encode()] if where == "watch" else []
    stream.append(f'{{"type":"ADDED","object":{obj("e", "12")}}}'.encode())
    rejected: list[decode.Rejected] = []
    stop = threading.Event()
    with StubApi(list_body=body, watches={"10": stream}) as api, caplog.at_level(logging.DEBUG):
        seen = Seen()
        informer = source.Informer(
            client=api.client(),
            resource=PROBE,
            namespace="ns",
            handler=seen,
            log=logging.getLogger(LOGGER),
            on_rejected=rejected.append,
        )
        threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
        try:
            wait_for(lambda: seen.names, until=lambda n: "e" in n, describe="'e' handled")
        finally:
            stop.set()

    assert seen.names == ["a", "e"], f"expected the handler to see a and e, saw {seen.names}"
    assert informer.get("ns/deep") is None, "expected the deep object not held"  # type: ignore[arg-type]
    reasons = [r.reason for r in rejected]
    assert len(reasons) == 1 and reasons[0].startswith("nesting 601 levels deep"), (
        f"expected on_rejected told once of 601 levels, saw {reasons}"
    )
    loud = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in loud] == ["object skipped: it could not be decoded"], (
        f"expected one skip line, saw {[r.getMessage() for r in loud]}"
    )
    assert loud[0].exc_info is None, "expected no traceback on the skip line"
