"""A role may create the kinds the API server answers without storing them (access and
token reviews), as on ansible-operator: the proxy marks only kinds that are persisted, so
no owner reference reaches a body the API server refuses for having metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from tests.runner.support import PROBE, StartOperator, probe, wait_condition

pytestmark = pytest.mark.integration

CONFIGMAP = GVK("", "v1", "ConfigMap")
ROLE = Path(__file__).parent / "fixtures" / "roles" / "virtual_kinds"


def test_a_role_creating_access_and_token_reviews_succeeds(
    kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: {ROLE}\n"
    )
    kube.create(PROBE, probe("reviews", namespace, {}), namespace=namespace)
    wait_condition(
        kube,
        namespace=namespace,
        name="reviews",
        kind="Successful",
        status="True",
        operator=operator,
    )
    answers = kube.get(CONFIGMAP, name="reviews-answers", namespace=namespace)["data"]
    expected = {
        "self_access": "True",  # the test runner's credentials are the cluster admin's
        "self_rules": "True",
        "local_access": "False",
        "subject_access": "False",
        "token_review": "False",
    }
    assert answers == expected, f"expected the API server's answers {expected}, saw {answers}"
