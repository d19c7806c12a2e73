"""Webhook roles called by the real API server: deny, allow, mutate, dry run, UPDATE,
timeouts under both failure policies, a role that does not parse, a warm launcher lost
mid-run, no write reaching the cluster from a webhook run, and the API reads of webhook
runs in the RBAC record (``GET /debug/rbac``)."""

from __future__ import annotations

import base64
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from runner.kube import errors
from runner.kube.types import GVK
from runner.tools.rbac import derive
from testkit import harness
from testkit.helpers import unique_name, wait_for
from tests.webhook.support import Served, gvk

CONFIG_MAP = GVK("", "v1", "ConfigMap")


def test_a_create_the_role_rejects_is_denied_with_its_message(served: Served) -> None:
    name = unique_name("big")
    code, out = served.kubectl(served.manifest("Gadget", name, {"size": 20}))
    assert code != 0 and "size 20 is over the limit of 10" in out, (
        f"expected the create denied with the role's fail_msg; kubectl said ({code}): {out}"
    )
    assert served.stored("Gadget", name) is None, "a denied Gadget was stored"


def test_an_allowed_create_is_stored_with_the_mutated_spec(served: Served) -> None:
    name = unique_name("small")
    code, out = served.kubectl(served.manifest("Gadget", name, {"color": "blue"}))
    assert code == 0, f"expected the create allowed; kubectl said ({code}): {out}"
    stored = served.stored("Gadget", name)
    assert stored is not None, "the allowed Gadget is not stored"
    expected = {"color": "blue", "size": 3, "defaulted": True}
    assert stored["spec"] == expected, f"expected spec {expected}, stored {stored['spec']}"


def test_a_dry_run_reaches_the_role_as_such_and_stores_nothing(served: Served) -> None:
    name = unique_name("dry")
    code, out = served.kubectl(
        served.manifest("Gadget", name, {"mode": "report"}), "--dry-run=server"
    )
    assert code != 0 and "dry_run=True" in out and "operation=CREATE" in out, (
        f"expected the role to see a dry-run CREATE; kubectl said ({code}): {out}"
    )
    code, out = served.kubectl(served.manifest("Gadget", name, {"size": 2}), "--dry-run=server")
    assert code == 0, f"expected the dry-run create allowed; kubectl said ({code}): {out}"
    assert served.stored("Gadget", name) is None, "a dry-run create was stored"


def test_an_update_shows_the_role_the_old_object(served: Served) -> None:
    name = unique_name("update")
    code, out = served.kubectl(served.manifest("Gadget", name, {"size": 2}))
    assert code == 0, f"expected the create allowed; kubectl said ({code}): {out}"
    with pytest.raises(errors.ApiError) as denied:
        served.kube.patch(
            gvk("Gadget"),
            name=name,
            namespace=served.namespace,
            body={"spec": {"size": 5, "mode": "report"}},
        )
    message = denied.value.message
    assert "operation=UPDATE" in message and "old_size=2" in message, (
        f"expected the role to see the UPDATE and the old size 2; the API server said: {message}"
    )


def test_a_role_past_its_timeout_is_killed_and_denied_under_fail(served: Served) -> None:
    code, out = served.kubectl(served.manifest("Doodad", unique_name("hang"), {"mode": "hang"}))
    assert code != 0 and "webhook role timed out after 2s in task 'Hang'" in out, (
        f"expected a denial naming the timeout and the task; kubectl said ({code}): {out}"
    )
    # The killed run leaves nothing behind: the next request is answered at once.
    code, out = served.kubectl(served.manifest("Doodad", unique_name("quick"), {}))
    assert code == 0, f"expected the next Doodad allowed; kubectl said ({code}): {out}"


def test_a_role_past_its_timeout_is_allowed_with_a_warning_under_ignore(served: Served) -> None:
    name = unique_name("hang")
    code, out = served.kubectl(served.manifest("Widget", name, {"mode": "hang"}))
    assert code == 0, f"expected the Widget allowed (failurePolicy Ignore); kubectl said: {out}"
    assert "timed out after 2s" in out, f"expected kubectl to show the warning; saw: {out}"
    assert served.stored("Widget", name) is not None, "the allowed Widget is not stored"


def test_a_role_that_does_not_parse_is_denied_and_the_runner_serves_on(served: Served) -> None:
    code, out = served.kubectl(served.manifest("Broken", unique_name("broken"), {}))
    assert code != 0 and "webhook role could not run" in out and "no_such_module" in out, (
        f"expected a denial naming Ansible's error; kubectl said ({code}): {out}"
    )
    code, out = served.kubectl(served.manifest("Gadget", unique_name("after"), {"size": 1}))
    assert code == 0, f"expected the runner to serve on after the broken role: {out}"


def test_a_write_from_a_webhook_role_is_refused_and_reaches_nothing(served: Served) -> None:
    name = unique_name("write")
    code, out = served.kubectl(served.manifest("Gadget", name, {"mode": "write"}))
    assert code != 0 and "read-only" in out, (
        f"expected the role's ConfigMap write refused by the read-only proxy; kubectl said: {out}"
    )
    with pytest.raises(errors.NotFoundError):
        served.kube.get(CONFIG_MAP, name=f"{name}-written", namespace=served.namespace)


def test_a_run_whose_warm_launcher_dies_is_answered_cold(served: Served) -> None:
    process = served.operator._proc  # the harness keeps its Popen private; read-only use
    assert process is not None
    runner_pid = process.pid
    name = unique_name("slow")
    done: list[tuple[int, str]] = []

    thread = threading.Thread(
        target=lambda: done.append(
            served.kubectl(served.manifest("Gadget", name, {"mode": "slow", "size": 20}))
        )
    )
    thread.start()
    launchers = wait_for(
        lambda: _launchers(runner_pid),
        describe="the runner's warm launchers",
        timeout=20,
    )
    wait_for(
        lambda: _sleeping(runner_pid),
        describe="the slow task running under the runner",
        timeout=20,
    )
    for pid in launchers:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout=60)
    assert done, "kubectl did not return"
    code, out = done[0]
    assert code != 0 and "size 20 is over the limit of 10" in out, (
        f"expected the cold re-run to deny with the role's message; kubectl said ({code}): {out}"
    )
    assert served.operator.logged("warm launcher lost the run; running it again cold"), (
        f"expected the runner to log the cold re-run; log tail:\n{served.operator.tail()}"
    )


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found += [int(p) for p in text.split()]
    return found


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        try:
            kids = _children(todo.pop())
        except OSError:
            continue
        out += kids
        todo += kids
    return out


def _launchers(runner_pid: int) -> list[int]:
    found = []
    for pid in _children(runner_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"zygote" in cmdline:
            found.append(pid)
    return found


def _sleeping(runner_pid: int) -> bool:
    for pid in _descendants(runner_pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\x002"):
                return True
        except OSError:
            continue
    return False


def test_requests_are_counted_per_webhook_path_and_code(served: Served) -> None:
    path = "/validate-webhook-test-example-com-v1-gadget"
    before = served.operator.metric(
        "controller_runtime_webhook_requests_total", webhook=path, code="200"
    )
    code, out = served.kubectl(served.manifest("Gadget", unique_name("counted"), {"size": 1}))
    assert code == 0, f"expected the create allowed; kubectl said ({code}): {out}"
    after = served.operator.metric(
        "controller_runtime_webhook_requests_total", webhook=path, code="200"
    )
    assert after >= before + 1, f"expected the request counted; {before} before, {after} after"
    latency = served.operator.metric(
        "controller_runtime_webhook_latency_seconds_count", webhook=path
    )
    assert latency >= after, f"expected a latency per request; {latency} for {after} requests"
    in_flight = served.operator.metric(
        "controller_runtime_webhook_requests_in_flight", webhook=path
    )
    assert in_flight == 0, f"expected no request in flight afterwards, saw {in_flight}"


def _debug_rbac(served: Served) -> dict[str, Any]:
    address = served.operator.address("metrics")
    assert address, f"no metrics endpoint logged; log tail:\n{served.operator.tail()}"
    code, body = harness.scrape(f"http://{address}/debug/rbac")
    assert code == 200, f"expected GET /debug/rbac to answer 200, saw {code}: {body[:200]}"
    return dict(json.loads(body))


def test_a_webhook_roles_reads_are_in_the_rbac_record_and_refused_writes_are_not(
    served: Served,
) -> None:
    # The validation role reads a ConfigMap (absent: k8s_info answers empty).
    name = unique_name("reads")
    code, out = served.kubectl(served.manifest("Gadget", name, {"size": 1, "limits": "limits"}))
    assert code == 0, f"expected the create allowed; kubectl said ({code}): {out}"
    # The mutation role tries to create a ConfigMap: the read-only proxy refuses it.
    code, out = served.kubectl(served.manifest("Gadget", unique_name("write"), {"mode": "write"}))
    assert code != 0 and "read-only" in out, f"expected the write refused; kubectl said: {out}"
    snapshot = _debug_rbac(served)
    uses = [u for w in snapshot["watches"] if w["kind"] == "Gadget" for u in w["uses"]]
    configmaps = sorted(
        (u["verb"], u["namespace"], u["source"]) for u in uses if u["resource"] == "configmaps"
    )
    want = ("get", served.namespace, "run")
    assert want in configmaps, (
        f"expected the webhook run's get configmaps in {served.namespace} recorded for Gadget; "
        f"configmaps uses recorded: {configmaps}"
    )
    writes = [c for c in configmaps if c[0] not in ("get", "list", "watch")]
    assert not writes, f"expected no write a webhook run was refused recorded, saw {writes}"
    needed = derive.derive(snapshot).needed()
    assert ("", "configmaps", "get") in needed, (
        f"expected the derived rules (playbook-operator rbac) to grant get configmaps, saw "
        f"{sorted(needed)}"
    )


def _review(served: Served, *, marker: Path, spec: dict[str, Any]) -> dict[str, Any]:
    attack = "{{ lookup('pipe', 'echo pwned >> " + str(marker) + "') }}"
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": attack,
            "operation": "CREATE",
            "namespace": served.namespace,
            "name": "claim",
            # The object claims a kind whose variable name would be a type tag.
            "object": {
                "apiVersion": "v1",
                "kind": "Ansible_vault",
                "metadata": {"name": "claim", "namespace": served.namespace},
                "spec": {**spec, "__Ansible_vault": "x", "note": attack},
            },
            "userInfo": {"username": attack, "groups": [attack], "__ANSIBLE_UNSAFE": "x"},
        },
    }


@pytest.mark.parametrize(
    ("prefix", "spec"),
    [
        pytest.param("validate", {"mode": "report"}, id="validating"),
        pytest.param("mutate", {"color": "red"}, id="mutating"),
    ],
)
def test_a_direct_review_with_tag_keys_and_a_tag_kind_runs_no_template(
    served: Served, tmp_path: Path, prefix: str, spec: dict[str, Any]
) -> None:
    marker = tmp_path / "pwned"
    path = f"/{prefix}-webhook-test-example-com-v1-gadget"
    answer = served.post(path, _review(served, marker=marker, spec=spec))["response"]
    assert not marker.exists(), f"a command from the request ran: {marker.read_text()!r}"
    if prefix == "validate":
        # The report mode fails with what the role saw: the literal user name.
        message = answer.get("status", {}).get("message", "")
        assert not answer["allowed"] and "user={{ lookup('pipe'" in message, answer
    else:
        assert answer["allowed"], f"expected the mutation allowed, saw {answer}"
        patch = json.loads(base64.b64decode(answer["patch"]))
        assert {"op": "add", "path": "/spec/defaulted", "value": True} in patch, patch
