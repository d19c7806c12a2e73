"""Whatever an AdmissionReview body holds, it is refused cleanly or reaches Ansible as data.

Bodies come from anyone who reaches the webhook port; object, old object and userInfo
are the caller's words, and so are the object's apiVersion and kind. Every variable an
admission run gets is loaded and templated with ansible-core's own loader and Templar
(as in tests/ansible/test_cr_data.py): it must come out literal.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.ansible import extravars, guard
from runner.base import errors
from runner.config import watches
from runner.webhook import hooks, review
from testkit import hostile
from tests.ansible.test_cr_data import as_ansible_sees_it, literal

WATCHES = Path(__file__).parent / "fixtures" / "properties-watches.yaml"
(WATCH,) = watches.load(WATCHES, environ={}, base_dir=WATCHES.parent)


def variables(request: review.Request) -> dict[str, Any]:
    """What :meth:`runner.webhook.hooks.Hooks._run` gives the role (the hook adds no vars)."""
    obj = request.obj if request.obj is not None else request.old
    assert obj is not None
    built = extravars.build(
        obj=obj,
        gvk=WATCH.gvk,
        snake_case=WATCH.snake_case_parameters,
        mark_unsafe=WATCH.mark_unsafe,
        watch_vars=WATCH.vars,
        finalizer_vars=None,
        allow_ansible_vars=WATCH.allow_ansible_vars_from_spec,
    )
    return {**built.variables, hooks.ADMISSION_VAR: hooks.admission_variable(request, watch=WATCH)}


def assert_inert(document: dict[str, Any]) -> None:
    text = guard.dumps(document)
    expected = literal(json.loads(text))
    seen = as_ansible_sees_it(text)
    assert seen == expected, f"Ansible rendered request data: expected\n{expected!r}\nsaw\n{seen!r}"


def claimed_object() -> st.SearchStrategy[dict[str, Any]]:
    """An object as a caller may send it: any apiVersion and kind, tag keys anywhere."""
    return st.fixed_dictionaries(
        {
            "apiVersion": st.one_of(st.just("v1"), hostile.strings()),
            "kind": st.one_of(st.sampled_from(["Ansible_vault", "ANSIBLE_UNSAFE"]), hostile.keys()),
            "metadata": st.fixed_dictionaries(
                {"name": hostile.strings(), "namespace": hostile.strings()},
                optional={"annotations": st.dictionaries(hostile.keys(), hostile.strings())},
            ),
            "spec": hostile.specs(),
        }
    )


def body(**request: Any) -> bytes:
    return json.dumps(
        {"apiVersion": review.API_VERSION, "kind": review.KIND, "request": request}
    ).encode()


@given(raw=st.binary(max_size=200))
def test_any_bytes_are_decoded_or_refused_with_a_review_error(raw: bytes) -> None:
    with contextlib.suppress(review.ReviewError):
        review.decode(raw)


def test_a_body_nested_past_the_decoders_limit_is_refused() -> None:
    deep = b'{"apiVersion": "admission.k8s.io/v1", "request": ' + b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(review.ReviewError, match="nests too deep"):
        review.decode(deep + b"}")


@given(
    obj=claimed_object(),
    old=st.one_of(st.none(), claimed_object()),
    user=st.dictionaries(hostile.keys(), st.one_of(hostile.strings(), st.lists(hostile.strings()))),
    uid=hostile.strings().filter(bool),
    operation=st.sampled_from(sorted(review.OPERATIONS)),
)
def test_no_generated_request_renders_a_template(
    obj: dict[str, Any], old: dict[str, Any] | None, user: dict[str, Any], uid: str, operation: str
) -> None:
    request = review.decode(
        body(uid=uid, operation=operation, object=obj, oldObject=old, userInfo=user)
    )
    try:
        document = variables(request)
    except errors.UnsafeVariablesError:
        return  # refused: the hook's failure policy answers, nothing ran
    assert not any(guard.is_tag_key(name) for name in document), sorted(document)
    assert_inert(document)


def test_an_object_claiming_a_tag_kind_is_named_after_the_watch() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Ansible_vault",
        "metadata": {"name": "{{ 6 * 7 }}", "namespace": "ns"},
        "spec": {"__Ansible_vault": "x", "note": "{{ 6 * 7 }}"},
    }
    request = review.decode(
        body(
            uid="{{ 6 * 7 }}",
            operation="CREATE",
            object=obj,
            userInfo={"username": "{{ 6 * 7 }}", "__ansible_vault": "x"},
        )
    )
    document = variables(request)
    key = extravars.object_key(WATCH.gvk)
    assert key in document and "__ansible_vault" not in document, sorted(document)
    assert_inert(document)
    seen = as_ansible_sees_it(guard.dumps(document))
    admission = seen[hooks.ADMISSION_VAR]
    assert admission["uid"] == "{{ 6 * 7 }}" and admission["user_info"] == {
        "username": "{{ 6 * 7 }}"
    }, admission
