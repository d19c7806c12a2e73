"""CR data is never code: whatever a CR holds, the extra vars Ansible reads render no template.

Each case builds the extra vars of a generated CR, writes them as the runtime does
(:func:`runner.ansible.guard.dumps`), loads the file with ansible-core's own loader as
``-e @file`` does (strings trusted as templates unless wrapped) and templates every
variable with ansible-core's Templar: the result must be the literal data. A type tag that
survived snake-casing, or a file ansible-core had to re-read as YAML, renders ``{{ 6 * 7 }}``
as ``42`` (or keeps a wrapper mapping) and fails the comparison. Runs on the installed
ansible-core line (2.19 in make test; 2.21 in its lane).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.ansible import extravars, guard, snake
from runner.base import errors
from runner.kube import decode
from runner.kube.types import GVK, KubeObject
from testkit import hostile

DataLoader = pytest.importorskip("ansible.parsing.dataloader").DataLoader
Templar = pytest.importorskip("ansible.template").Templar

WATCHED = GVK("cache.example.com", "v1alpha1", "Memcached")


def cr(spec: Any, *, annotations: dict[str, str] | None = None) -> KubeObject:
    return {
        "apiVersion": WATCHED.api_version,
        "kind": WATCHED.kind,
        "metadata": {"name": "m", "namespace": "ns", "annotations": annotations or {}},
        "spec": spec,
    }


def build(obj: KubeObject, *, snake_case: bool = True) -> extravars.ExtraVars:
    return extravars.build(
        obj=obj,
        gvk=WATCHED,
        snake_case=snake_case,
        mark_unsafe=True,
        watch_vars={},
        finalizer_vars=None,
    )


def literal(value: Any) -> Any:
    """``value`` with every unsafe wrapper replaced by its string: what a role must see."""
    if isinstance(value, dict):
        if guard.is_wrapper(value):
            return value[guard.UNSAFE_KEY]
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(item) for item in value]
    return value


def as_ansible_sees_it(text: str) -> Any:
    """The file loaded as ``-e @file`` loads it, every variable templated."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "extravars"
        path.write_text(text)
        loader = DataLoader()
        data = loader.load_from_file(str(path), cache="none", trusted_as_template=True)
        return Templar(loader=loader, variables=data).template(data)


def assert_inert(built: extravars.ExtraVars) -> None:
    text = guard.dumps(built.variables)
    expected = literal(json.loads(text))
    seen = as_ansible_sees_it(text)
    assert seen == expected, (
        f"Ansible rendered CR data: expected the literal variables\n{expected!r}\nsaw\n{seen!r}"
    )


@pytest.mark.parametrize("spelling", [pytest.param(s, id=s) for s in hostile.TAG_SPELLINGS])
@pytest.mark.parametrize(
    "nesting", [pytest.param(False, id="top"), pytest.param(True, id="nested")]
)
def test_each_tag_spelling_is_dropped_and_the_rest_stays_literal(
    spelling: str, nesting: bool
) -> None:
    spec = {"message": "{{ 6 * 7 }}", "nodeSelector": {"zone": "{{ 'x' * 3 }}"}}
    if nesting:
        spec["cfg"] = {spelling: "x", "keep": "{{ 6 * 7 }}"}
    else:
        spec[spelling] = "x"
    built = build(cr(spec))
    where = f"spec.cfg.{spelling}" if nesting else f"spec.{spelling}"
    assert where in built.dropped_keys, f"expected {where} reported, saw {built.dropped_keys}"
    text = guard.dumps(built.variables)
    assert "__ansible_vault" not in text.lower() and "__ansible_type" not in text.lower()
    assert_inert(built)
    seen = as_ansible_sees_it(text)
    assert seen["message"] == "{{ 6 * 7 }}", f"the control string changed: {seen['message']!r}"


def test_a_cr_nested_past_the_limit_is_refused_not_passed() -> None:
    deep = hostile.nested("{{ 6 * 7 }}", guard.MAX_DEPTH)
    with pytest.raises(errors.UnsafeVariablesError, match="nests deeper than"):
        build(cr({"deep": deep}))


def test_a_cr_nested_up_to_the_limit_is_passed_literally() -> None:
    # spec.deep inside the CR inside the variable: the deepest CR the limit allows.
    deep = hostile.nested("{{ 6 * 7 }}", guard.MAX_DEPTH - 4)
    built = build(cr({"deep": deep}))
    assert decode.nesting(json.loads(guard.dumps(built.variables))) == guard.MAX_DEPTH
    assert_inert(built)


@given(spec=hostile.specs(), snake_case=st.booleans())
def test_no_generated_cr_renders_a_template(spec: dict[str, Any], snake_case: bool) -> None:
    assert_inert(build(cr(spec), snake_case=snake_case))


@given(
    annotations=st.dictionaries(hostile.keys(), hostile.strings(), max_size=4),
    labels=st.dictionaries(hostile.keys(), hostile.strings(), max_size=2),
)
def test_no_generated_metadata_renders_a_template(
    annotations: dict[str, str], labels: dict[str, str]
) -> None:
    obj = cr({"size": 1}, annotations=annotations)
    obj["metadata"]["labels"] = labels
    assert_inert(build(obj))


@given(value=hostile.values(max_leaves=8), depth=st.integers(min_value=0, max_value=400))
def test_depth_is_refused_or_passed_literally_never_reread_as_yaml(value: Any, depth: int) -> None:
    obj = cr({"deep": hostile.nested(value, depth)})
    try:
        built = build(obj)
    except errors.UnsafeVariablesError:
        return
    assert_inert(built)


@given(key=hostile.keys())
def test_every_key_written_is_checked_after_snake_casing(key: str) -> None:
    built = build(cr({key: "v", "inner": {key: "v"}}))
    document = json.loads(guard.dumps(built.variables))
    guard.check(document)  # raises on a tag left anywhere
    if guard.is_tag_key(key) or guard.is_tag_key(snake.to_snake(key)):
        assert f"spec.{key}" in built.dropped_keys and f"spec.inner.{key}" in built.dropped_keys


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        pytest.param({"a": {"__Ansible_Vault": "x"}}, "type tag", id="tag-any-case"),
        pytest.param({"a": [{"b": {"__ansible_type": "x"}}]}, "type tag", id="tag-deep"),
        pytest.param({"a": {"__ansible_unsafe": "x", "b": 1}}, "type tag", id="wrapper-plus"),
        pytest.param({"a": {"__ansible_unsafe": 5}}, "type tag", id="wrapper-not-string"),
        pytest.param({"a": "\ud800"}, "UTF-8", id="lone-surrogate"),
        pytest.param({"\udcff": 1}, "UTF-8", id="surrogate-key"),
        pytest.param({"a": hostile.nested(1, guard.MAX_DEPTH)}, "deeper", id="too-deep"),
    ],
)
def test_the_final_check_refuses_what_ansible_would_decode(document: Any, problem: str) -> None:
    with pytest.raises(errors.UnsafeVariablesError, match=problem):
        guard.dumps(document)


def test_variables_are_named_after_the_watch_not_the_object() -> None:
    claim = cr({"note": "{{ 6 * 7 }}"})
    claim["apiVersion"], claim["kind"] = "v1", "Ansible_vault"
    built = build(claim)
    assert "_cache_example_com_memcached" in built.variables, sorted(built.variables)
    assert not any(guard.is_tag_key(name) for name in built.variables), sorted(built.variables)
    assert_inert(built)
