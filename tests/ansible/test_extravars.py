"""Extra vars carry operator-sdk's names, order and precedence."""

from __future__ import annotations

from typing import Any

import pytest

from runner.ansible import extravars
from runner.kube.types import GVK, KubeObject


def widget(spec: Any = None) -> KubeObject:
    obj: KubeObject = {
        "apiVersion": "cache.example-inc.com/v1alpha1",
        "kind": "MemCached",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u-1"},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


def build(obj: KubeObject, **kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "snake_case": True,
        "mark_unsafe": False,
        "watch_vars": {},
        "finalizer_vars": None,
    }
    options.update(kwargs)
    return extravars.build(obj=obj, **options)


@pytest.mark.parametrize(
    ("gvk", "key"),
    [
        pytest.param(GVK("cache.example.com", "v1", "Memcached"), "_cache_example_com_memcached"),
        pytest.param(GVK("", "v1", "Secret"), "__secret", id="core-group"),
        pytest.param(GVK("cert-manager.k8s.io", "v1", "Issuer"), "_cert_manager_k8s_io_issuer"),
    ],
)
def test_object_key_names_group_and_kind(gvk: GVK, key: str) -> None:
    assert extravars.object_key(gvk) == key


def test_keys_come_in_operator_sdk_order() -> None:
    got = build(widget({"sizeCount": 3}), watch_vars={"w": 1}, finalizer_vars={"f": 2})
    assert list(got) == [
        "size_count",
        "ansible_operator_meta",
        "_cache_example_inc_com_memcached",
        "_cache_example_inc_com_memcached_spec",
        "w",
        "f",
    ]


def test_values_are_the_spec_meta_object_and_raw_spec() -> None:
    obj = widget({"sizeCount": 3, "podSpec": {"nodeName": "n1"}})
    got = build(obj)
    assert got["size_count"] == 3
    assert got["pod_spec"] == {"node_name": "n1"}
    assert got["ansible_operator_meta"] == {"name": "w", "namespace": "ns"}
    assert got["_cache_example_inc_com_memcached"] == obj
    assert got["_cache_example_inc_com_memcached_spec"] == {
        "sizeCount": 3,
        "podSpec": {"nodeName": "n1"},
    }


def test_snake_case_can_be_turned_off() -> None:
    got = build(widget({"sizeCount": 3}), snake_case=False)
    assert got["sizeCount"] == 3
    assert "size_count" not in got


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, "from-meta", id="meta-overrides-spec"),
        pytest.param({"watch_vars": {"ansible_operator_meta": "w"}}, "w", id="watch-vars-win"),
        pytest.param(
            {
                "watch_vars": {"ansible_operator_meta": "w"},
                "finalizer_vars": {"ansible_operator_meta": "f"},
            },
            "f",
            id="finalizer-vars-win-last",
        ),
    ],
)
def test_later_entries_override_earlier_ones(kwargs: dict[str, Any], expected: str) -> None:
    got = build(widget({"ansibleOperatorMeta": "from-spec"}), **kwargs)
    value = got["ansible_operator_meta"]
    shown = "from-meta" if isinstance(value, dict) else value
    assert shown == expected, f"ansible_operator_meta: expected {expected!r}, got {value!r}"


def test_core_kind_without_spec_gets_an_empty_one() -> None:
    secret: KubeObject = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "ns"},
        "data": {"k": "dg=="},
    }
    got = build(secret)
    assert got["__secret"] == {**secret, "spec": {}}
    assert got["__secret_spec"] == {}
    assert "spec" not in secret, "the CR passed in must not be changed"


def test_mark_unsafe_wraps_every_string_of_cr_data() -> None:
    obj = widget({"sizeText": "{{ 6 * 7 }}", "items": ["a", {"deepKey": "b"}], "count": 2})
    got = build(obj, mark_unsafe=True, watch_vars={"plain": "{{ kept }}"})
    unsafe = extravars.UNSAFE_KEY
    assert got["size_text"] == {unsafe: "{{ 6 * 7 }}"}
    assert got["items"] == [{unsafe: "a"}, {"deep_key": {unsafe: "b"}}]
    assert got["count"] == 2, "non-strings stay as they are"
    assert got["_cache_example_inc_com_memcached"]["metadata"]["name"] == {unsafe: "w"}
    assert got["_cache_example_inc_com_memcached_spec"]["sizeText"] == {unsafe: "{{ 6 * 7 }}"}
    # operator-sdk leaves these alone: they come from the operator author, not the CR.
    assert got["ansible_operator_meta"] == {"name": "w", "namespace": "ns"}
    assert got["plain"] == "{{ kept }}"


def test_mark_unsafe_off_leaves_strings_plain() -> None:
    got = build(widget({"sizeText": "{{ 6 * 7 }}"}))
    assert got["size_text"] == "{{ 6 * 7 }}"
