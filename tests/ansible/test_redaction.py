"""A Secret a role reads without ``no_log`` is redacted in the job event itself, which
is what the logs, the ``job_events`` and ``stdout`` artifacts and ``preview`` see; its
values are cut from the free text of that event and of the run's later events too."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from runner.ansible import events, redact
from runner.config import sections
from tests.ansible.conftest import Captured

VALUE = "correct-horse-battery"
ENCODED = base64.b64encode(VALUE.encode()).decode()


def secret(**fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "creds", "namespace": "ns"},
        "type": "Opaque",
        "data": {"password": ENCODED},
        **fields,
    }


def result_event(name: str, *, args: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    res = {**res, "invocation": {"module_args": args}}
    shown = json.dumps(res)
    return {
        "event": name,
        "event_data": {"host": "localhost", "task": "Read it", "res": res, "task_args": ""},
        "stdout": f"fatal: [localhost]: FAILED! => {shown}",
    }


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(
            result_event(
                "runner_on_ok",
                args={"kind": "Secret", "name": "creds"},
                res={"resources": [secret()]},  # list items name no kind
            ),
            id="k8s_info-listing",
        ),
        pytest.param(
            result_event(
                "runner_on_failed",
                args={"definition": secret(kind="Secret", stringData={"token": VALUE})},
                res={"result": secret(kind="Secret", apiVersion="v1"), "msg": "conflict"},
            ),
            id="k8s-object-and-definition",
        ),
        pytest.param(
            result_event(
                "runner_on_failed",
                args={"src": "/x"},
                res={"result": {"items": [secret(kind="Secret")]}, "msg": "no"},
            ),
            id="nested-secret",
        ),
    ],
)
def test_secret_data_is_redacted_in_the_event_and_everything_logged(
    event: dict[str, Any], captured: tuple[logging.Logger, Captured]
) -> None:
    logger, handler = captured
    for level in sections.LogEvents:
        tally = events.Tally(log=logger, level=level, verbosity=3)
        copy = json.loads(json.dumps(event))
        assert tally.handle(copy) is True
        later = {"event": "verbose", "stdout": f"the password is {VALUE}"}
        tally.handle(later)
        kept = json.dumps([copy, later])
        assert ENCODED not in kept and VALUE not in kept, kept
        assert redact.REDACTED in json.dumps(copy["event_data"]), copy["event_data"]
        assert "creds" in kept, "the Secret is still shown, without its data"
    everything = handler.everything()
    assert ENCODED not in everything and VALUE not in everything, everything


def test_a_configmap_is_left_alone() -> None:
    configmap = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"key": "plain-value"}}
    event = result_event("runner_on_ok", args={"kind": "ConfigMap"}, res={"result": configmap})
    events.Tally(log=logging.getLogger("t"), level=sections.LogEvents.TASKS, verbosity=0).handle(
        event
    )
    assert event["event_data"]["res"]["result"]["data"] == {"key": "plain-value"}
    assert "plain-value" in event["stdout"]
