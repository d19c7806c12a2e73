"""The hook the primary informers call for an object they could not decode
(runner.status.rejection).

It writes operator-sdk's markError Failure with a merge patch of /status, never
reading the object first, conditional on the uid and resourceVersion it could
read; it waits until the runner may write, leaves other shards' objects alone,
and does not rewrite a Failure the object already shows (our own write's echo).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from runner.kube import decode
from runner.kube.types import GVK, ObjectKey
from runner.status import rejection
from tests.watch.source.stub_api import PROBE

NOW = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)
REASON = "nesting 1006 levels deep, deeper than the runtime can decode"


class Sent:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any, str | None]] = []

    def send(self, method: str, path: str, *, body: Any, content_type: str | None = None) -> None:
        self.calls.append((method, path, body, content_type))


def bad(*, conditions: list[dict[str, Any]] | None = None, observed: int | None = None) -> Any:
    status: dict[str, Any] = {"conditions": conditions or []}
    if observed is not None:
        status["observedGeneration"] = observed
    obj = {
        "metadata": {
            "name": "deep",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "77",
            "generation": 2,
        },
        "spec": decode.Truncated(start=0, end=1, depth=1000),
        "status": status,
    }
    return decode.Rejected(obj=obj, reason=REASON, type="ADDED")


def reporter(sent: Sent, *, owns: bool = True) -> rejection.Reporter:
    return rejection.Reporter(client=sent, owns=lambda gvk, key: owns, now=lambda: NOW)


def test_writes_failure_by_merge_patch_without_a_read() -> None:
    sent = Sent()
    running = {"type": "Running", "status": "True", "reason": "Running", "message": "x"}
    report = reporter(sent)
    report.open()
    report.hook(PROBE)(bad(conditions=[running]))

    assert len(sent.calls) == 1, f"expected one PATCH, saw {sent.calls}"
    method, path, body, content_type = sent.calls[0]
    assert (method, content_type) == ("PATCH", "application/merge-patch+json"), sent.calls[0]
    assert path == "/apis/tests.playbook-operator.dev/v1/namespaces/ns/probes/deep/status", path
    assert body["metadata"] == {"uid": "u-1", "resourceVersion": "77"}, body["metadata"]
    assert body["status"]["observedGeneration"] == 2, body["status"]
    by_type = {c["type"]: c for c in body["status"]["conditions"]}
    assert by_type["Running"]["status"] == "False", by_type
    failure = by_type["Failure"]
    assert (failure["status"], failure["reason"]) == ("True", "Failed"), failure
    assert failure["message"] == (
        f"the object could not be decoded: {REASON}; it is not reconciled"
    ), failure["message"]


@pytest.mark.parametrize(
    ("opened", "owns", "writes"),
    [
        pytest.param(False, True, 0, id="not-leading-yet"),
        pytest.param(True, False, 0, id="another-shards-object"),
        pytest.param(True, True, 1, id="leading-and-owning"),
    ],
)
def test_writes_only_when_this_runner_may(opened: bool, owns: bool, writes: int) -> None:
    sent = Sent()
    report = reporter(sent, owns=owns)
    if opened:
        report.open()
    report.hook(PROBE)(bad())
    assert len(sent.calls) == writes, f"expected {writes} writes, saw {sent.calls}"


def test_waiting_rejections_are_written_when_opened() -> None:
    sent = Sent()
    report = reporter(sent)
    report.hook(PROBE)(bad())
    assert not sent.calls, sent.calls
    report.open()
    assert len(sent.calls) == 1, f"expected the waiting rejection written, saw {sent.calls}"


def test_the_echo_of_our_own_write_is_not_written_again() -> None:
    sent = Sent()
    message = rejection.message(REASON)
    failure = {"type": "Failure", "status": "True", "reason": "Failed", "message": message}
    report = reporter(sent)
    report.open()
    report.hook(PROBE)(bad(conditions=[failure], observed=2))
    assert not sent.calls, f"expected no write for a Failure already shown, saw {sent.calls}"


def test_unnamed_objects_are_not_written() -> None:
    sent = Sent()
    assert not rejection.write(
        sent, resource=PROBE, rejected=decode.Rejected(obj={}, reason="not JSON"), now=NOW
    )
    assert not sent.calls


def test_owns_is_asked_with_the_kind_and_key() -> None:
    asked: list[tuple[GVK, ObjectKey]] = []

    def owns(gvk: GVK, key: ObjectKey) -> bool:
        asked.append((gvk, key))
        return False

    report = rejection.Reporter(client=Sent(), owns=owns, now=lambda: NOW)
    report.open()
    report.hook(PROBE)(bad())
    assert asked == [(PROBE.gvk, "ns/deep")], asked
