"""AdmissionReview v1: the API server's request decoded, the answer encoded.

The first and last step of one webhook call (see :mod:`runner.webhook`): a body
that is not an ``admission.k8s.io/v1`` AdmissionReview with a request is refused
with :class:`ReviewError` (HTTP 400); an answer carries the request's ``uid``, the
verdict, the warnings and, for a mutation, the JSONPatch (RFC 6902) that turns the
request's object into the one the role wants (:func:`diff`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
#: The API server keeps warnings short; so do we.
MAX_WARNINGS, MAX_WARNING_LENGTH = 20, 256
MAX_MESSAGE_LENGTH = 2000


class ReviewError(ValueError):
    """The body is not an AdmissionReview this server can answer (HTTP 400)."""


@dataclass(frozen=True)
class Request:
    """What one AdmissionReview asks; ``obj`` is None for DELETE, ``old`` for CREATE."""

    uid: str
    operation: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    user_info: Mapping[str, Any]
    dry_run: bool
    namespace: str
    name: str


@dataclass(frozen=True)
class Verdict:
    """The answer: allowed or not (``code`` and ``message`` say why not), a patch, warnings."""

    allowed: bool
    message: str = ""
    code: int = 200
    patch: Sequence[Mapping[str, Any]] | None = None
    warnings: tuple[str, ...] = field(default=())


def decode(body: bytes) -> Request:
    """The request of an AdmissionReview body; raises :class:`ReviewError`."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReviewError(f"the body is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise ReviewError("the body nests too deep to decode") from exc
    if not isinstance(review, dict):
        raise ReviewError("expected an AdmissionReview object")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        seen = f"{review.get('apiVersion')}/{review.get('kind')}"
        raise ReviewError(f"expected apiVersion {API_VERSION} and kind {KIND}, saw {seen}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise ReviewError("the AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("request.uid is missing")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise ReviewError(f"request.operation {operation!r} is not one of {sorted(OPERATIONS)}")
    obj, old = request.get("object"), request.get("oldObject")
    for key, value in (("object", obj), ("oldObject", old)):
        if value is not None and not isinstance(value, dict):
            raise ReviewError(f"request.{key} is not an object")
    if obj is None and old is None:
        raise ReviewError("the request has neither object nor oldObject")
    user_info = request.get("userInfo")
    return Request(
        uid=uid,
        operation=operation,
        obj=obj,
        old=old,
        user_info=user_info if isinstance(user_info, dict) else {},
        dry_run=request.get("dryRun") is True,
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
    )


def encode(uid: str, verdict: Verdict) -> bytes:
    """The AdmissionReview answering request ``uid`` with ``verdict``."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {
            "code": verdict.code,
            "message": verdict.message[:MAX_MESSAGE_LENGTH],
            "reason": "Forbidden" if verdict.code == 403 else "InternalError",
        }
    if verdict.allowed and verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(list(verdict.patch)).encode()).decode()
    warnings = [w[:MAX_WARNING_LENGTH] for w in verdict.warnings[:MAX_WARNINGS]]
    if warnings:
        response["warnings"] = warnings
    return json.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response}).encode()


def diff(before: Any, after: Any, *, path: str = "") -> list[dict[str, Any]]:
    """A JSONPatch turning ``before`` into ``after``: mappings key by key, anything else
    (lists included) replaced whole. Removes come before adds, keys in sorted order."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        ops: list[dict[str, Any]] = []
        for key in sorted(set(before) - set(after)):
            ops.append({"op": "remove", "path": f"{path}/{pointer(key)}"})
        for key in sorted(after):
            where = f"{path}/{pointer(key)}"
            if key not in before:
                ops.append({"op": "add", "path": where, "value": after[key]})
            else:
                ops.extend(diff(before[key], after[key], path=where))
        return ops
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


def pointer(key: str) -> str:
    """``key`` as one JSON Pointer token (RFC 6901): ``~`` → ``~0``, ``/`` → ``~1``."""
    return str(key).replace("~", "~0").replace("/", "~1")
