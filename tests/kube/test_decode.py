"""Decoding LIST answers and watch lines that hold one object nested too deep to decode.

The API server accepts 10000 levels of nesting; ``json.loads`` stops before that (near
1000 on Python 3.11, 5000 on 3.12, 10000 on 3.13: its C recursion limit). One such
object must cost only itself: the others in the same answer decode, and the bad one is
named (namespace, name, resourceVersion) with the reason.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from runner.kube import decode


def nested(levels: int) -> str:
    """JSON text of a mapping ``levels`` deep."""
    return '{"a":' * levels + "1" + "}" * levels


def obj_text(name: str, rv: str, *, spec: str = '{"size":1}') -> str:
    return (
        '{"apiVersion":"tests.playbook-operator.dev/v1","kind":"Probe",'
        f'"metadata":{{"name":"{name}","namespace":"ns","uid":"uid-{name}",'
        f'"resourceVersion":"{rv}","generation":1}},'
        f'"spec":{spec},"status":{{"conditions":[{{"type":"Running","status":"True"}}]}}}}'
    )


def list_body(*items: str, rv: str = "100") -> bytes:
    return (
        f'{{"kind":"ProbeList","metadata":{{"resourceVersion":"{rv}"}},"items":[{",".join(items)}]}}'
    ).encode()


def names(items: list[dict[str, Any]]) -> list[str]:
    return [str(item["metadata"]["name"]) for item in items]


def first_undecodable() -> int:
    """The shallowest nesting this Python's ``json.loads`` refuses (a RecursionError)."""
    low, high = 1, 10000  # decodes, refused (on every supported Python)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            json.loads(nested(middle))
        except RecursionError:
            high = middle
        else:
            low = middle
    return high


DEPTHS = [
    pytest.param(first_undecodable(), id="first-undecodable"),
    pytest.param(10000, id="10000-deep"),
]


@pytest.mark.parametrize("levels", DEPTHS)
def test_list_keeps_the_others_and_names_the_deep_item(levels: int) -> None:
    body = list_body(
        obj_text("before", "7"), obj_text("deep", "8", spec=nested(levels)), obj_text("after", "9")
    )
    with pytest.raises(RecursionError):
        json.loads(body)  # the premise: the whole answer does not decode

    listing = decode.listing(body)

    assert names(listing.items) == ["before", "after"], f"decoded items: {names(listing.items)}"
    assert listing.metadata == {"resourceVersion": "100"}, listing.metadata
    assert len(listing.rejected) == 1, f"rejected: {listing.rejected}"
    bad = listing.rejected[0]
    meta = bad.obj["metadata"]
    assert (meta["namespace"], meta["name"], meta["resourceVersion"], meta["uid"]) == (
        "ns",
        "deep",
        "8",
        "uid-deep",
    ), meta
    assert f"nesting {levels + 1} levels deep" in bad.reason, bad.reason
    assert bad.obj["status"]["conditions"] == [{"type": "Running", "status": "True"}], bad.obj
    assert not decode.intact(bad.obj), "the deep spec must be replaced by a marker"
    # The good items decode exactly as json.loads decodes them alone.
    assert listing.items[0] == json.loads(obj_text("before", "7")), listing.items[0]


@pytest.mark.parametrize("levels", DEPTHS)
@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED", "DELETED"])
def test_watch_line_with_a_deep_object_is_named(levels: int, kind: str) -> None:
    line = f'{{"type":"{kind}","object":{obj_text("deep", "42", spec=nested(levels))}}}'.encode()

    got = decode.event(line)

    assert isinstance(got, decode.Rejected), f"expected a rejection, got {type(got).__name__}"
    assert got.type == kind, got.type
    assert got.obj["metadata"]["name"] == "deep", got.obj
    assert got.obj["metadata"]["resourceVersion"] == "42", got.obj
    assert f"nesting {levels + 1} levels deep" in got.reason, got.reason


def test_a_good_watch_line_takes_the_fast_path() -> None:
    line = f'{{"type":"ADDED","object":{obj_text("fine", "5")}}}'.encode()
    assert decode.event(line) == json.loads(line)


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        pytest.param('{"n":' + "9" * 5000 + "}", "integer", id="huge-integer"),
        pytest.param('{"s":"\xff"}', "utf-8", id="invalid-utf8"),
    ],
)
def test_other_undecodable_items_are_named(spec: str, reason: str) -> None:
    raw = obj_text("odd", "3", spec="SPEC").encode().replace(b"SPEC", spec.encode("latin-1"))
    body = (
        b'{"metadata":{"resourceVersion":"4"},"items":['
        + raw
        + b","
        + obj_text("fine", "2").encode()
        + b"]}"
    )

    listing = decode.listing(body)

    assert names(listing.items) == ["fine"], names(listing.items)
    assert [r.obj["metadata"]["name"] for r in listing.rejected] == ["odd"], listing.rejected
    assert reason in listing.rejected[0].reason, listing.rejected[0].reason


def test_a_broken_list_is_an_error_not_an_empty_list() -> None:
    with pytest.raises(decode.DecodeError):
        decode.listing(b'{"metadata":{},"items":[{"metadata":')


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"a": [1, 2.5, -3e-7, True, False, None, 'x"\\\n\u00e9\u2603']}, id="scalars"),
        pytest.param({"": {}, "l": [], "n": [[[]], [{}]]}, id="empties"),
        pytest.param([{"k": {"k": {"k": [0]}}}], id="nesting"),
    ],
)
def test_parse_reads_what_json_reads(doc: Any) -> None:
    for text in (json.dumps(doc), json.dumps(doc, indent=2)):
        value, _ = decode.parse(text, max_depth=50)
        assert value == doc, f"parsed {value!r} from {text!r}"


def test_parse_truncates_below_its_depth() -> None:
    value, deepest = decode.parse('{"a":{"b":{"c":[1]}},"d":2}', max_depth=2)
    assert deepest == 4, deepest
    assert value["d"] == 2 and isinstance(value["a"]["b"], decode.Truncated), value
