"""What the roles of public ansible-operator operators do runs here as it does there.

One operator process serves one watch whose role, ``public_patterns``, does in one run
what such roles do (community.general.json_query, ansible.posix.patch, ``k8s_info``
waiting on a condition, ``set_fact`` loops, ``include_role``, ``block/rescue/always``,
``lookup('kubernetes.core.k8s')``, ``operator_sdk.util.k8s_status`` conditions and
``k8s_event``, a generated password kept in a Secret, ``k8s`` with ``apply: true`` and
with ``template:``). One CR is reconciled, its greeting changes and it is reconciled
again, then a spec field the role ignores changes and it is reconciled a third time;
each case then checks what the runs left in the cluster, after later runs where being
idempotent is the point. Cases are subtests: one operator and three runs serve them all.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from tests.compat.conftest import Start
from tests.runner.support import PROBE, condition, probe, probe_watches, wait_condition

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
EVENT = GVK("", "v1", "Event")

NAME = "patterns"
# ansible.posix.patch runs the `patch` program on the operator's host.
HAS_PATCH = shutil.which("patch") is not None
SPEC: dict[str, Any] = {
    "greeting": "hello",
    "members": [
        {"name": "cy", "role": "admin", "tags": []},
        {"name": "ada", "role": "admin", "tags": ["oncall"]},
        {"name": "bob", "role": "viewer", "tags": ["oncall", "night"]},
    ],
    "usePatch": HAS_PATCH,
}
LABELS = {
    "app.kubernetes.io/name": NAME,
    "app.kubernetes.io/managed-by": "public-patterns",
    "app.kubernetes.io/component": "server",
}


@dataclass(frozen=True)
class Seen:
    """What one reconcile left: the CR and the objects the role writes."""

    cr: dict[str, Any]
    results: dict[str, str]
    settings: dict[str, str]
    secret: dict[str, Any]
    deployment: dict[str, Any]
    events: list[dict[str, Any]]  # the role's own (reason CredentialsGenerated)


@dataclass(frozen=True)
class Runs:
    first: Seen
    second: Seen  # after spec.greeting changed
    third: Seen  # after a spec field the role does not read changed


def _look(kube: Client, namespace: str) -> Seen:
    def data(name: str) -> dict[str, str]:
        return dict(kube.get(CONFIGMAP, name=name, namespace=namespace).get("data") or {})

    events = kube.list(EVENT, namespace=namespace)["items"]
    return Seen(
        cr=kube.get(PROBE, name=NAME, namespace=namespace),
        results=data(f"{NAME}-results"),
        settings=data(f"{NAME}-settings"),
        secret=kube.get(SECRET, name=f"{NAME}-credentials", namespace=namespace),
        deployment=kube.get(DEPLOYMENT, name=f"{NAME}-server", namespace=namespace),
        events=[e for e in events if e.get("reason") == "CredentialsGenerated"],
    )


def _password(seen: Seen) -> str:
    return base64.b64decode(seen.secret["data"]["password"]).decode()


# -- the cases: each checks one pattern's observable result ---------------------------


def json_query(runs: Runs) -> None:
    results = runs.first.results
    seen = (results.get("admins"), results.get("on_call"))
    assert seen == ("ada,cy", "ada,bob"), f"expected admins ada,cy, on call ada,bob; saw {seen}"


def ansible_posix(runs: Runs) -> None:
    if not HAS_PATCH:
        pytest.skip("ansible.posix.patch needs the `patch` program, which this host lacks")
    patched = runs.first.results.get("patched")
    expected = "welcome, patched by ansible.posix.patch\n"
    assert patched == expected, f"expected the patched file {expected!r}, saw {patched!r}"


def k8s_info_wait(runs: Runs) -> None:
    available = runs.first.results.get("available")
    assert available == "True", f"expected k8s_info to return once Available, saw {available!r}"


def set_fact_loop(runs: Runs) -> None:
    roles = json.loads(runs.first.results.get("member_roles", "null"))
    expected = {"cy": "admin", "ada": "admin", "bob": "viewer"}
    assert roles == expected, f"expected the loop to build {expected}, saw {roles}"


def include_role(runs: Runs) -> None:
    labels = json.loads(runs.first.results.get("labels", "null"))
    assert labels == LABELS, f"expected the included role's labels {LABELS}, saw {labels}"
    on_deployment = runs.first.deployment["metadata"].get("labels")
    assert on_deployment == LABELS, f"expected the Deployment labelled {LABELS}: {on_deployment}"


def block_rescue_always(runs: Runs) -> None:
    results = runs.first.results
    assert results.get("always_ran") == "True", f"the always section did not run: {results}"
    refusal = results.get("refusal", "")
    assert "Not_A_Valid_Name" in refusal and "422" in refusal, (
        f"expected the API server's 422 for the invalid name in the rescue, saw {refusal!r}"
    )
    # A rescued failure does not fail the run (ansible-operator skips rescued events).
    failure = condition(runs.first.cr, "Failure")
    assert failure is None or failure["status"] == "False", f"Failure condition: {failure}"


def lookup_k8s(runs: Runs) -> None:
    uid = runs.first.cr["metadata"]["uid"]
    seen = runs.first.results.get("cr_uid")
    assert seen == uid, f"expected the lookup to read the CR (uid {uid}), saw {seen!r}"


def k8s_status_conditions(runs: Runs) -> None:
    for label, seen, greeting in (
        ("first", runs.first, "hello"),
        ("second", runs.second, "hi again"),
    ):
        status = seen.cr.get("status") or {}
        fields = (status.get("admins"), status.get("greeting"))
        assert fields == (["ada", "cy"], greeting), f"{label} run's status fields: {status}"
        ready = condition(seen.cr, "Ready") or {}
        got = (ready.get("status"), ready.get("reason"), ready.get("message"))
        want = ("True", "DeploymentAvailable", f"{NAME}-server is available")
        assert got == want, f"{label} run: expected the role's Ready condition {want}: {status}"
        # The operator's own conditions sit beside the role's.
        successful = condition(seen.cr, "Successful") or {}
        assert successful.get("status") == "True", f"{label} run: Successful: {status}"


def k8s_event(runs: Runs) -> None:
    # Sent only when the password is generated: once, though the role ran three times.
    events = runs.third.events
    assert len(events) == 1, f"expected one CredentialsGenerated event, saw {events}"
    event = events[0]
    involved = event.get("involvedObject") or {}
    want = (PROBE.kind, NAME, runs.first.cr["metadata"]["uid"], 1)
    got = (involved.get("kind"), involved.get("name"), involved.get("uid"), event.get("count"))
    assert got == want, f"expected the event about the CR (kind, name, uid, count) {want}: {got}"


def generated_secret(runs: Runs) -> None:
    password = _password(runs.first)
    assert len(password) == 24 and password.isalnum(), f"generated password: {password!r}"
    first = (password, runs.first.secret["metadata"]["resourceVersion"])
    for label, seen in (("second", runs.second), ("third", runs.third)):
        again = (_password(seen), seen.secret["metadata"]["resourceVersion"])
        assert again == first, f"the {label} run changed the Secret: {first} → {again}"


def k8s_apply(runs: Runs) -> None:
    meta = runs.first.deployment["metadata"]
    applied = meta.get("annotations", {}).get("kubectl.kubernetes.io/last-applied-configuration")
    assert applied, f"expected a last-applied-configuration annotation: {meta}"
    owners = [(o["kind"], o["name"]) for o in meta.get("ownerReferences") or []]
    assert owners == [(PROBE.kind, NAME)], f"expected the CR as the Deployment's owner: {owners}"
    every_run = (runs.first, runs.second, runs.third)
    generations = [seen.deployment["metadata"]["generation"] for seen in every_run]
    assert len(set(generations)) == 1, (
        f"expected later applies to leave the Deployment's spec alone: generations {generations}"
    )


def k8s_template(runs: Runs) -> None:
    for label, seen, greeting in (
        ("first", runs.first, "hello"),
        ("second", runs.second, "hi again"),
    ):
        expected = (
            f"[server]\ngreeting = {greeting}\n"
            "member.ada = admin\nmember.bob = viewer\nmember.cy = admin\n"
        )
        ini = seen.settings.get("settings.ini")
        assert ini == expected, f"{label} run: expected settings.ini {expected!r}, saw {ini!r}"


def idempotent(runs: Runs) -> None:
    # A run with nothing new to do changes nothing (ansible-operator's ansibleResult).
    running = condition(runs.third.cr, "Running") or {}
    result = running.get("ansibleResult") or {}
    assert result.get("changed") == 0 and result.get("failures") == 0, (
        f"expected the third run to report changed=0, failures=0: {running}"
    )


@dataclass(frozen=True)
class Case:
    id: str
    check: Callable[[Runs], None]


CASES = (
    Case("community.general.json_query", json_query),
    Case("ansible.posix.patch", ansible_posix),
    Case("k8s_info-wait_condition", k8s_info_wait),
    Case("set_fact-loop", set_fact_loop),
    Case("include_role", include_role),
    Case("block-rescue-always", block_rescue_always),
    Case("lookup-kubernetes.core.k8s", lookup_k8s),
    Case("k8s_status-conditions", k8s_status_conditions),
    Case("k8s_event", k8s_event),
    Case("password-secret-stable", generated_secret),
    Case("k8s-apply", k8s_apply),
    Case("k8s-template", k8s_template),
    Case("idempotent-rerun", idempotent),
)


def test_roles_using_public_operators_patterns_run_as_on_ansible_operator(
    kube: Client, namespace: str, operators: Start, subtests: pytest.Subtests
) -> None:
    operator = operators(probe_watches().replace("role: probe", "role: public_patterns"))
    kube.create(PROBE, probe(NAME, namespace, SPEC), namespace=namespace)
    wait_condition(
        kube, namespace=namespace, name=NAME, kind="Successful", status="True", operator=operator
    )
    seen = [_look(kube, namespace)]
    for change in ({"greeting": "hi again"}, {"unread": "by the role"}):
        kube.patch(PROBE, name=NAME, namespace=namespace, body={"spec": change})
        wait_condition(
            kube,
            namespace=namespace,
            name=NAME,
            kind="Successful",
            status="True",
            operator=operator,
        )
        seen.append(_look(kube, namespace))
    runs = Runs(*seen)

    for case in CASES:
        with subtests.test(case.id):
            case.check(runs)
