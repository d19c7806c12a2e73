"""AdmissionReview v1 decoding and encoding, and the JSONPatch from the object a role wants."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from runner.webhook import review


def _apply(doc: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902's add, remove and replace (all ``diff`` emits), to check patches by effect."""
    doc = copy.deepcopy(doc)
    for op in patch:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        if not tokens:
            doc = op["value"]
            continue
        parent = doc
        for token in tokens[:-1]:
            parent = parent[token]
        if op["op"] == "remove":
            del parent[tokens[-1]]
        else:
            parent[tokens[-1]] = op["value"]
    return doc


BASE: dict[str, Any] = {
    "apiVersion": "cache.example.com/v1alpha1",
    "kind": "Memcached",
    "metadata": {"name": "m", "labels": {"a/b": "1", "c~d": "2"}},
    "spec": {"size": 1, "items": [1, 2], "nested": {"keep": True, "drop": "x"}},
}


@pytest.mark.parametrize(
    "after",
    [
        pytest.param(BASE, id="unchanged"),
        pytest.param({**BASE, "spec": {**BASE["spec"], "size": 3}}, id="replace-a-field"),
        pytest.param({**BASE, "spec": {**BASE["spec"], "memory": 64}}, id="add-a-field"),
        pytest.param({**BASE, "spec": {"size": 1, "items": [1, 2]}}, id="remove-a-subtree"),
        pytest.param({**BASE, "spec": {**BASE["spec"], "items": [2]}}, id="lists-whole"),
        pytest.param(
            {**BASE, "metadata": {"name": "m", "labels": {"a/b": "9", "e/f~g": "3"}}},
            id="keys-escaped-as-pointers",
        ),
        pytest.param(
            {**BASE, "spec": {**BASE["spec"], "size": 1.0}}, id="int-to-float-is-a-change"
        ),
        pytest.param(
            {**BASE, "spec": {**BASE["spec"], "size": True}}, id="int-to-bool-is-a-change"
        ),
    ],
)
def test_the_patch_turns_the_request_object_into_the_wanted_one(after: dict[str, Any]) -> None:
    patch = review.diff(BASE, after)
    result = _apply(BASE, patch)
    assert json.dumps(result, sort_keys=True) == json.dumps(after, sort_keys=True), (
        f"expected the patch {patch} to give {after}, it gave {result}"
    )
    if after is BASE:
        assert patch == [], f"expected no patch for an unchanged object, saw {patch}"


def _review(**request: Any) -> bytes:
    return json.dumps(
        {"apiVersion": review.API_VERSION, "kind": review.KIND, "request": request}
    ).encode()


GOOD = {"uid": "u1", "operation": "CREATE", "object": {"kind": "X"}, "userInfo": {"username": "a"}}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        pytest.param(b"{", "not JSON", id="not-json"),
        pytest.param(b"[]", "expected an AdmissionReview", id="not-an-object"),
        pytest.param(
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}
            ).encode(),
            "expected apiVersion admission.k8s.io/v1",
            id="v1beta1",
        ),
        pytest.param(
            json.dumps({"apiVersion": review.API_VERSION, "kind": review.KIND}).encode(),
            "no request",
            id="no-request",
        ),
        pytest.param(_review(**{**GOOD, "uid": ""}), "uid", id="no-uid"),
        pytest.param(_review(**{**GOOD, "operation": "PATCH"}), "operation", id="bad-operation"),
        pytest.param(_review(**{**GOOD, "object": None}), "neither", id="no-object"),
        pytest.param(_review(**{**GOOD, "object": [1]}), "not an object", id="object-a-list"),
    ],
)
def test_a_body_that_is_no_admission_review_is_refused(body: bytes, problem: str) -> None:
    with pytest.raises(review.ReviewError) as refused:
        review.decode(body)
    assert problem in str(refused.value), f"expected {problem!r} in {refused.value}"


def test_a_request_is_decoded() -> None:
    request = review.decode(_review(**GOOD, dryRun=True, namespace="ns", name="n"))
    assert (request.uid, request.operation, request.dry_run, request.namespace) == (
        "u1",
        "CREATE",
        True,
        "ns",
    ), f"decoded {request}"
    assert request.user_info == {"username": "a"}, f"decoded user info {request.user_info}"


def test_an_allowed_mutation_carries_its_patch_and_warnings() -> None:
    patch = [{"op": "add", "path": "/spec/x", "value": 1}]
    answer = json.loads(
        review.encode("u1", review.Verdict(allowed=True, patch=patch, warnings=("w",)))
    )
    response = answer["response"]
    assert answer["apiVersion"] == review.API_VERSION and response["uid"] == "u1"
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == patch, f"saw {response}"
    assert response["warnings"] == ["w"], f"saw {response}"


def test_a_denial_carries_its_code_and_message_and_no_patch() -> None:
    verdict = review.Verdict(
        allowed=False, code=403, message="no", patch=[{"op": "remove", "path": "/x"}]
    )
    response = json.loads(review.encode("u1", verdict))["response"]
    assert response["status"] == {"code": 403, "message": "no", "reason": "Forbidden"}, response
    assert "patch" not in response, f"a denial carried a patch: {response}"
