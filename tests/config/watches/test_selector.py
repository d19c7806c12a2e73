"""Label selectors: which labels match, and the labelSelector query the API server is sent."""

from __future__ import annotations

from typing import Any

import pytest

from runner.config import selector

In, NotIn = selector.Operator.IN, selector.Operator.NOT_IN
Exists, DoesNotExist = selector.Operator.EXISTS, selector.Operator.DOES_NOT_EXIST

EXAMPLE = selector.LabelSelector.parse(
    {
        "matchLabels": {"app": "a"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["y", "x"]},
            {"key": "foo", "operator": "DoesNotExist"},
        ],
    }
)


@pytest.mark.parametrize(
    ("chosen", "labels", "expected"),
    [
        pytest.param(selector.LabelSelector(), {}, True, id="empty-matches-nothing-labelled"),
        pytest.param(selector.LabelSelector(), {"a": "b"}, True, id="empty-matches-all"),
        pytest.param(EXAMPLE, {"app": "a", "tier": "x"}, True, id="all-hold"),
        pytest.param(EXAMPLE, {"app": "b", "tier": "x"}, False, id="label-differs"),
        pytest.param(EXAMPLE, {"tier": "x"}, False, id="label-missing"),
        pytest.param(EXAMPLE, {"app": "a", "tier": "z"}, False, id="in-not-listed"),
        pytest.param(EXAMPLE, {"app": "a"}, False, id="in-key-missing"),
        pytest.param(EXAMPLE, {"app": "a", "tier": "x", "foo": ""}, False, id="does-not-exist"),
    ],
)
def test_matches(chosen: selector.LabelSelector, labels: dict[str, str], expected: bool) -> None:
    seen = chosen.matches(labels)

    assert seen is expected, f"expected {chosen} to match {labels}: {expected}, saw {seen}"


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        pytest.param(("k", In, ("a",)), {"k": "a"}, True, id="in"),
        pytest.param(("k", In, ("a",)), {"k": "b"}, False, id="in-other-value"),
        pytest.param(("k", NotIn, ("a",)), {"k": "b"}, True, id="notin-other-value"),
        pytest.param(("k", NotIn, ("a",)), {}, True, id="notin-key-missing"),
        pytest.param(("k", NotIn, ("a",)), {"k": "a"}, False, id="notin-listed"),
        pytest.param(("k", Exists, ()), {"k": ""}, True, id="exists-empty-value"),
        pytest.param(("k", Exists, ()), {}, False, id="exists-missing"),
        pytest.param(("k", DoesNotExist, ()), {}, True, id="does-not-exist"),
        pytest.param(("k", DoesNotExist, ()), {"k": "a"}, False, id="does-not-exist-present"),
    ],
)
def test_requirement_matches(
    requirement: tuple[str, selector.Operator, tuple[str, ...]],
    labels: dict[str, str],
    expected: bool,
) -> None:
    key, operator, values = requirement
    chosen = selector.Requirement(key=key, operator=operator, values=values)

    seen = chosen.matches(labels)

    assert seen is expected, f"expected {chosen} to match {labels}: {expected}, saw {seen}"


def test_match_label_needs_the_key_even_for_an_empty_value() -> None:
    chosen = selector.LabelSelector(match_labels=(("k", ""),))

    assert not chosen.matches({}), "expected k= not to match an object without k, saw a match"
    assert chosen.matches({"k": ""}), "expected k= to match k='', saw no match"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, "", id="none"),
        pytest.param({}, "", id="empty"),
        pytest.param({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2", id="labels-sorted"),
        pytest.param(
            {"matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["b", "a"]}]},
            "t notin (a,b)",
            id="notin",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "example.com/x", "operator": "Exists"}]},
            "example.com/x",
            id="exists",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "a"},
                "matchExpressions": [{"key": "z", "operator": "In", "values": ["v"]}],
            },
            "app=a,z in (v)",
            id="labels-and-expressions",
        ),
    ],
)
def test_to_query(raw: Any, expected: str) -> None:
    seen = selector.LabelSelector.parse(raw).to_query()

    assert seen == expected, f"expected {expected!r}, saw {seen!r}"


def test_to_query_of_the_example() -> None:
    seen = EXAMPLE.to_query()

    assert seen == "app=a,!foo,tier in (x,y)", f"expected keys sorted, saw {seen!r}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, True, id="none"),
        pytest.param({"matchLabels": {}, "matchExpressions": []}, True, id="empty-parts"),
        pytest.param({"matchLabels": {"a": "b"}}, False, id="labels"),
    ],
)
def test_is_empty(raw: Any, expected: bool) -> None:
    seen = selector.LabelSelector.parse(raw).is_empty

    assert seen is expected, f"expected is_empty={expected} for {raw}, saw {seen}"


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        pytest.param("app", True, id="name"),
        pytest.param("app.kubernetes.io/name", True, id="prefixed"),
        pytest.param("a" * 63, True, id="name-63"),
        pytest.param("a" * 64, False, id="name-64"),
        pytest.param("Example.com/x", False, id="prefix-uppercase"),
        pytest.param("-app", False, id="leading-dash"),
        pytest.param("a/b/c", False, id="two-slashes"),
        pytest.param("", False, id="empty"),
    ],
)
def test_label_key_syntax(key: str, valid: bool) -> None:
    raw = {"matchLabels": {key: "v"}}

    try:
        selector.LabelSelector.parse(raw)
        seen = True
    except selector.SelectorError:
        seen = False

    assert seen is valid, f"expected key {key!r} valid={valid}, saw valid={seen}"
