"""Extra vars carry operator-sdk's names, order and precedence."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runner.ansible import extravars, guard
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
    return extravars.build(obj=obj, gvk=GVK.of(obj), **options).variables


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
    # Names from the API server are data whatever markUnsafe says of the CR's own.
    assert got["ansible_operator_meta"] == {
        "name": {guard.UNSAFE_KEY: "w"},
        "namespace": {guard.UNSAFE_KEY: "ns"},
    }
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
    unsafe = guard.UNSAFE_KEY
    assert got["size_text"] == {unsafe: "{{ 6 * 7 }}"}
    assert got["items"] == [{unsafe: "a"}, {"deep_key": {unsafe: "b"}}]
    assert got["count"] == 2, "non-strings stay as they are"
    assert got["_cache_example_inc_com_memcached"]["metadata"]["name"] == {unsafe: "w"}
    assert got["_cache_example_inc_com_memcached_spec"]["sizeText"] == {unsafe: "{{ 6 * 7 }}"}
    assert got["ansible_operator_meta"] == {"name": {unsafe: "w"}, "namespace": {unsafe: "ns"}}
    # operator-sdk leaves these alone: they come from the operator author, not the CR.
    assert got["plain"] == "{{ kept }}"


def test_mark_unsafe_off_leaves_strings_plain() -> None:
    got = build(widget({"sizeText": "{{ 6 * 7 }}"}))
    assert got["size_text"] == "{{ 6 * 7 }}"


# -- CR data that must not steer Ansible -------------------------------------------

HOSTILE_SPEC = {
    "size": 1,
    "ansiblePythonInterpreter": "/tmp/evil",
    "ansibleShellExecutable": "/tmp/evil-sh",
    "ansible_connection": "ssh",
    "ANSIBLE_BECOME": True,
    "ansibleOperatorMeta": {"name": "other"},
}


def built(spec: Any, **kwargs: Any) -> extravars.ExtraVars:
    options: dict[str, Any] = {
        "snake_case": True,
        "mark_unsafe": True,
        "watch_vars": {},
        "finalizer_vars": None,
    }
    options.update(kwargs)
    obj = widget(spec)
    return extravars.build(obj=obj, gvk=GVK.of(obj), **options)


@pytest.mark.parametrize(
    "snake_case", [pytest.param(True, id="snake-case"), pytest.param(False, id="keys-as-written")]
)
def test_spec_keys_naming_ansible_variables_are_withheld(snake_case: bool) -> None:
    got = built(HOSTILE_SPEC, snake_case=snake_case)
    leaked = sorted(k for k in got.variables if k.lower().startswith("ansible_"))
    assert leaked == ["ansible_operator_meta"], f"Ansible variables from the spec: {leaked}"
    assert got.variables["ansible_operator_meta"] == extravars.mark_unsafe(
        {"name": "w", "namespace": "ns"}
    )
    # snake_case turns ANSIBLE_BECOME into _ansible_become, which is no Ansible variable.
    expected = (
        [
            "ansiblePythonInterpreter",
            "ansibleShellExecutable",
            "ansible_connection",
            "ansibleOperatorMeta",
        ]
        if snake_case
        else ["ansible_connection", "ANSIBLE_BECOME"]
    )
    assert list(got.withheld_fields) == expected
    # The raw spec keeps everything, as data.
    raw = got.variables["_cache_example_inc_com_memcached_spec"]
    assert raw["ansiblePythonInterpreter"] == {guard.UNSAFE_KEY: "/tmp/evil"}
    assert got.variables["size"] == 1


def test_spec_keys_naming_the_runners_variables_are_withheld() -> None:
    spec = {"_cache_example_inc_com_memcached": "x", "_cache_example_inc_com_memcached_spec": "y"}
    got = built(spec, snake_case=False, allow_ansible_vars=True)
    assert got.withheld_fields == tuple(spec)
    assert got.variables["_cache_example_inc_com_memcached"]["kind"] == {
        guard.UNSAFE_KEY: "MemCached"
    }


def test_watch_can_allow_ansible_variables_from_the_spec() -> None:
    got = built(HOSTILE_SPEC, allow_ansible_vars=True)
    assert got.variables["ansible_python_interpreter"] == {guard.UNSAFE_KEY: "/tmp/evil"}
    assert got.variables["ansible_connection"] == {guard.UNSAFE_KEY: "ssh"}
    # The runner's own names are never taken from a spec.
    assert got.withheld_fields == ("ansibleOperatorMeta",)
    assert got.variables["ansible_operator_meta"] == extravars.mark_unsafe(
        {"name": "w", "namespace": "ns"}
    )


@pytest.mark.parametrize(
    "mark_unsafe", [pytest.param(True, id="mark-unsafe"), pytest.param(False, id="trusted")]
)
def test_keys_ansible_would_decode_are_dropped_everywhere(mark_unsafe: bool) -> None:
    spec = {
        "secret": {"__ansible_vault": "$ANSIBLE_VAULT;1.1;AES256\n6162"},
        "items": [{"__ansible_unsafe": 5, "keep": "k"}],
        "typed": {"__ansible_type": "x"},
    }
    obj = widget(spec)
    obj["metadata"]["annotations"] = {"__ansible_vault": "not allowed by the API, still dropped"}
    got = extravars.build(
        obj=obj,
        gvk=GVK.of(obj),
        snake_case=True,
        mark_unsafe=mark_unsafe,
        watch_vars={},
        finalizer_vars=None,
    )
    assert got.dropped_keys == (
        "metadata.annotations.__ansible_vault",
        "spec.secret.__ansible_vault",
        "spec.items[0].__ansible_unsafe",
        "spec.typed.__ansible_type",
    )
    text = json.dumps(got.variables)
    for tag in ("__ansible_vault", "__ansible_type"):
        assert tag not in text, f"{tag} reached the extra vars: {text}"
    if not mark_unsafe:
        del got.variables["ansible_operator_meta"]  # wrapped always: names from the API server
        assert "__ansible_unsafe" not in json.dumps(got.variables), text
    assert got.variables["secret"] == {}
    assert got.variables["items"][0] == {"keep": {guard.UNSAFE_KEY: "k"} if mark_unsafe else "k"}
    assert "__ansible_vault" in obj["spec"]["secret"], "the CR passed in must not be changed"


def test_spec_keys_cannot_override_watch_or_finalizer_vars() -> None:
    got = built(
        {"finalizing": True, "state": "absent"},
        watch_vars={"state": "present"},
        finalizer_vars={"finalizing": False},
    )
    assert got.variables["state"] == "present"
    assert got.variables["finalizing"] is False
    assert got.clean, "plain spec keys are not reported"
