"""Status never lies: on the embedded cluster, a run's result lands only on its own CR,
and a run that cannot start ends in Failure rather than Running forever."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import KubeObject
from runner.status import conditions
from testkit.helpers import wait_for
from tests.runner.support import PROBE, StartOperator, condition, probe, probe_watches

pytestmark = pytest.mark.integration


def recreate(kube: Client, namespace: str, name: str) -> tuple[KubeObject, KubeObject]:
    """Create ``name``, delete it and create it again: (the first object, the second)."""
    first = kube.create(PROBE, probe(name, namespace, {"message": "old"}), namespace=namespace)
    kube.delete(PROBE, name=name, namespace=namespace)

    def gone() -> bool:
        try:
            kube.get(PROBE, name=name, namespace=namespace)
        except kube_errors.NotFoundError:
            return True
        return False

    wait_for(gone, describe=f"{namespace}/{name} deleted")
    second = kube.create(PROBE, probe(name, namespace, {"message": "new"}), namespace=namespace)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    return first, second


def test_a_status_patch_from_before_a_recreation_conflicts(
    kube: Client, namespace: str, probe_crd: object
) -> None:
    """What the uid pinning relies on: the status subresource ignores metadata.uid, but a
    patch conditional on the deleted object's resourceVersion never applies to its successor."""
    first, _ = recreate(kube, namespace, "pinned")
    body = {
        "metadata": {"resourceVersion": first["metadata"]["resourceVersion"]},
        "status": {"observedGeneration": 7},
    }
    with pytest.raises(kube_errors.ConflictError):
        kube.patch(PROBE, name="pinned", namespace=namespace, body=body, subresource="status")


def test_a_result_for_a_deleted_cr_never_lands_on_its_successor(
    kube: Client, namespace: str, probe_crd: object
) -> None:
    first, _ = recreate(kube, namespace, "successor")
    written = conditions.write(
        kube,
        gvk=PROBE,
        namespace=namespace,
        name="successor",
        conditions_update=lambda c: conditions.mark_error(
            c, message="old run", now=datetime.now(UTC)
        ),
        observed_generation=5,
        current=first,  # what the run started from: a 409, then a fresh read of the successor
        uid=first["metadata"]["uid"],
    )
    live = kube.get(PROBE, name="successor", namespace=namespace)
    assert written is None, f"expected the write to find its CR gone, it returned {written}"
    assert not live.get("status"), f"the new CR's status must stay empty, saw {live.get('status')}"


def test_a_run_that_cannot_start_ends_in_failure_and_retries(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches(), args=('--ansible-args=--tags "unterminated',))
    kube.create(PROBE, probe("bad-args", namespace, {"message": "x"}), namespace=namespace)

    def observe() -> KubeObject:
        return kube.get(PROBE, name="bad-args", namespace=namespace)

    def failed(obj: KubeObject) -> bool:
        failure = condition(obj, "Failure")
        return bool(failure and failure.get("status") == "True")

    obj = operator.eventually(observe, until=failed, describe="Failure=True", timeout=60)
    failure, running = condition(obj, "Failure"), condition(obj, "Running")
    assert failure is not None and "No closing quotation" in failure["message"], failure
    assert running is None or running["status"] != "True", f"Running left True: {running}"
    operator.eventually(
        lambda: sum(line.get("msg") == "reconcile failed" for line in list(operator.lines)),
        until=lambda n: n >= 2,
        describe="the failed reconcile retried (>= 2 'reconcile failed' lines)",
    )
