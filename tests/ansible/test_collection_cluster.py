"""The shipped collection's Kubernetes modules against the embedded cluster.

Each test runs a fixture playbook through AnsibleRunner with the admin
kubeconfig in ``K8S_AUTH_KUBECONFIG`` (as the operator passes its per-run one),
then reads the result back with the runner's client.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

import devcluster
from runner.ansible import launch
from runner.ansible import spec as ansible_spec
from runner.kube import client, errors
from runner.kube.types import GVK, KubeObject
from testkit.helpers import unique_name, wait_for
from tests.ansible.conftest import FIXTURES, PLAYBOOKS, Captured, debug_outputs

CRD = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
WIDGET = GVK("ansible-tests.playbook-operator.dev", "v1", "Widget")
GADGET = GVK("ansible-tests.playbook-operator.dev", "v1", "Gadget")
EVENT = GVK("", "v1", "Event")


@pytest.fixture(scope="session")
def crds(kube: client.Client) -> None:
    """Widget (with a status subresource) and Gadget (without), kept for the session."""
    for path in sorted((FIXTURES / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        with contextlib.suppress(errors.ConflictError):
            kube.create(CRD, crd)

        def established(name: str = crd["metadata"]["name"]) -> bool:
            conditions = (kube.get(CRD, name=name).get("status") or {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

        wait_for(established, describe=f"CRD {path.name} established")
    kube.forget_discovery()
    wait_for(lambda: kube.resource(WIDGET), describe="Widget served", ignore=(errors.KubeError,))


@pytest.fixture
def widget(crds: None, kube: client.Client, namespace: str) -> KubeObject:
    body: KubeObject = {
        "apiVersion": WIDGET.api_version,
        "kind": WIDGET.kind,
        "metadata": {"name": "w", "namespace": namespace},
        "spec": {"size": 1},
    }
    return kube.create(WIDGET, body, namespace=namespace)


class Play(Protocol):
    def __call__(self, playbook: str, **extravars: Any) -> launch.RunResult: ...


@pytest.fixture
def play(
    runner: launch.AnsibleRunner,
    captured: tuple[logging.Logger, Captured],
    cluster: devcluster.Cluster,
    namespace: str,
    tmp_path: Path,
) -> Iterator[Play]:
    """Run a fixture playbook as the operator would for the Widget ``w``."""
    logger, _ = captured
    count = iter(range(1000))

    def run(playbook: str, **extravars: Any) -> launch.RunResult:
        spec = ansible_spec.RunSpec(
            ident=f"run-{next(count)}",
            private_data_dir=tmp_path / "pdd",
            playbook=PLAYBOOKS / f"{playbook}.yml",
            extravars={"ansible_operator_meta": {"name": "w", "namespace": namespace}, **extravars},
            envvars={"K8S_AUTH_KUBECONFIG": str(cluster.kubeconfig)},
        )
        return runner.run(spec, log=logger)

    yield run


def live_status(kube: client.Client, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = kube.get(WIDGET, name="w", namespace=namespace).get("status", {})
    return status


def ok(result: launch.RunResult) -> launch.RunResult:
    assert not result.failed and not result.stats_missing, result.failed_tasks or result
    return result


READY = {"type": "Ready", "status": "True", "reason": "AllGood", "message": "fine"}


# -- k8s_status ------------------------------------------------------------------------


def test_status_and_conditions_are_merged_into_the_live_status(
    widget: KubeObject, play: Play, kube: client.Client, namespace: str
) -> None:
    assert ok(play("status", status={"hello": "world", "nested": {"a": 1}})).changed == 1
    result = ok(play("status", status={"nested": {"b": 2}}, conditions=[READY]))
    assert result.changed == 1
    status = live_status(kube, namespace)
    assert status["hello"] == "world", "fields left out survive"
    assert status["nested"] == {"a": 1, "b": 2}, "nested objects are merged"
    (ready,) = status["conditions"]
    assert {k: ready[k] for k in READY} == READY
    assert ready["lastTransitionTime"], "a new condition gets a lastTransitionTime"


def test_writing_what_is_already_there_changes_nothing(
    widget: KubeObject, play: Play, kube: client.Client, namespace: str
) -> None:
    ok(play("status", status={"hello": "world"}, conditions=[READY]))
    before = kube.get(WIDGET, name="w", namespace=namespace)["metadata"]["resourceVersion"]
    result = ok(play("status", status={"hello": "world"}, conditions=[READY]))
    assert result.changed == 0
    after = kube.get(WIDGET, name="w", namespace=namespace)["metadata"]["resourceVersion"]
    assert after == before, "no write happened"


def test_conditions_merge_by_type(
    widget: KubeObject, play: Play, kube: client.Client, namespace: str
) -> None:
    stamped = dict(READY, lastTransitionTime="2030-01-01T00:00:00Z")
    ok(play("status", conditions=[stamped]))
    ok(play("status", conditions=[{"type": "Other", "status": "False"}]))
    ok(play("status", conditions=[dict(READY, message="still fine")]))
    conditions = {c["type"]: c for c in live_status(kube, namespace)["conditions"]}
    assert set(conditions) == {"Ready", "Other"}
    assert conditions["Ready"]["message"] == "still fine"
    assert conditions["Ready"]["lastTransitionTime"] == "2030-01-01T00:00:00Z", (
        "the status did not change, so neither does lastTransitionTime"
    )
    ok(play("status", conditions=[dict(READY, status="False")]))
    ready = {c["type"]: c for c in live_status(kube, namespace)["conditions"]}["Ready"]
    assert ready["status"] == "False"
    assert ready["lastTransitionTime"] != "2030-01-01T00:00:00Z"


def test_replace_puts_the_whole_status(
    widget: KubeObject, play: Play, kube: client.Client, namespace: str
) -> None:
    ok(play("status", status={"hello": "world"}, conditions=[READY]))
    ok(play("status", status={"only": "this"}, replace=True))
    assert live_status(kube, namespace) == {"only": "this"}


@pytest.mark.parametrize(
    ("replace_lists", "changed", "items"),
    [
        pytest.param(False, 0, [1, 2], id="contained-list-is-unchanged"),
        pytest.param(True, 1, [1], id="replace-lists-compares-whole-lists"),
    ],
)
def test_replace_lists_decides_how_lists_compare(
    widget: KubeObject,
    play: Play,
    kube: client.Client,
    namespace: str,
    *,
    replace_lists: bool,
    changed: int,
    items: list[int],
) -> None:
    ok(play("status", status={"items": [1, 2]}))
    result = ok(play("status", status={"items": [1]}, replace_lists=replace_lists))
    assert result.changed == changed
    assert live_status(kube, namespace)["items"] == items


def test_kind_may_be_given_by_short_name(
    widget: KubeObject, play: Play, kube: client.Client, namespace: str
) -> None:
    ok(play("status", kind="wdg", status={"short": True}))
    assert live_status(kube, namespace)["short"] is True


@pytest.mark.parametrize(
    ("extravars", "message"),
    [
        pytest.param(
            {"kind": "Gadget", "status": {"a": 1}},
            "does not support the status subresource",
            id="no-status-subresource",
        ),
        pytest.param(
            {"status": {"conditions": [READY]}, "conditions": [READY]},
            "cannot specify conditions in both",
            id="conditions-twice",
        ),
        pytest.param(
            {"conditions": [dict(READY, reason="not camel")]},
            "failed to validate",
            id="reason-not-camel-case",
        ),
        pytest.param(
            {"conditions": [dict(READY, lastTransitionTime="yesterday")]},
            "failed to validate",
            id="time-not-rfc3339",
        ),
        pytest.param(
            {"kind": "NoSuchKind", "status": {"a": 1}},
            "Failed to find exact match",
            id="unknown-kind",
        ),
    ],
)
def test_status_failures_are_clear(
    widget: KubeObject, play: Play, extravars: dict[str, Any], message: str
) -> None:
    result = play("status", **extravars)
    (failed,) = result.failed_tasks
    assert failed.task == "Set status"
    assert message in failed.message, failed.message


# -- k8s_event ------------------------------------------------------------------------


def recorded(handler: Captured) -> dict[str, Any]:
    event: dict[str, Any] = debug_outputs(handler)["Show the event"]
    return event


def test_event_is_created_then_counted(
    widget: KubeObject,
    play: Play,
    kube: client.Client,
    namespace: str,
    captured: tuple[logging.Logger, Captured],
) -> None:
    name = unique_name("w-event")
    ok(play("event", event_name=name, reason="Created", message="made it"))
    first = kube.get(EVENT, name=name, namespace=namespace)
    assert (first["count"], first["reason"], first["message"]) == (1, "Created", "made it")
    assert first["involvedObject"]["uid"] == widget["metadata"]["uid"]
    assert first["source"] == {"component": "tests"}
    assert first["reportingComponent"] == "ansible-tests.playbook-operator.dev/tests"

    ok(play("event", event_name=name, reason="Created", message="made it again"))
    second = kube.get(EVENT, name=name, namespace=namespace)
    assert (second["count"], second["message"]) == (2, "made it again")
    assert second["firstTimestamp"] == first["firstTimestamp"]

    ok(play("event", event_name=name, reason="Deleted", message="gone"))
    third = kube.get(EVENT, name=name, namespace=namespace)
    assert (third["count"], third["reason"]) == (1, "Deleted"), "a new reason starts over"


def test_append_timestamp_creates_a_new_event_each_time(
    widget: KubeObject, play: Play, captured: tuple[logging.Logger, Captured]
) -> None:
    names = set()
    for _ in range(2):
        ok(play("event", event_name="w-tick", reason="Tick", message="t", append_timestamp=True))
        names.add(recorded(captured[1])["metadata"]["name"])
    assert len(names) == 2 and all(n.startswith("w-tick.") for n in names), names
