"""Nothing an AdmissionReview's caller names becomes a key of the RBAC record: the
object's apiVersion and kind are the caller's to choose, and the webhooks' view of the
record notes an entry only under the kind of a run in progress — the watch's, as the
webhooks start each run."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from runner.ansible import launch
from runner.ansible import spec as ansible_spec
from runner.base import logs
from runner.config import sections, watches
from runner.kube.types import GVK, KubeObject
from runner.proxy import audit, ownership, sessions
from runner.rbac import record, rules
from runner.tools.rbac import derive
from runner.webhook import hooks, review
from tests.reconcile import fakes

GADGET = GVK("webhook.test.example.com", "v1", "Gadget")
CLAIMED = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
READ = rules.Use(group="", resource="configmaps", verb="get", namespace="ns1")


def test_the_webhooks_view_keys_nothing_by_a_kind_no_run_is_for() -> None:
    seen = record.Record()
    view = seen.reads_only()
    seen.run_started((GADGET, "ns1", "g1@req-uid"))  # as the webhooks start a run
    claimed_run = (CLAIMED, "ns1", "g1@req-uid")  # the proxy's owner: the object's kind

    view.used(CLAIMED, READ)
    view.denied(CLAIMED, READ, run=claimed_run)
    view.used(GADGET, READ)

    kinds = [w["kind"] for w in seen.snapshot()["watches"]]
    assert kinds == ["Gadget"], f"expected entries under the watch's kind only, saw {kinds}"


def test_the_webhooks_view_notes_a_denial_only_for_a_run_in_progress() -> None:
    seen = record.Record()
    view = seen.reads_only()
    view.denied(GADGET, READ, run=(GADGET, "ns1", "g1@ended"))
    assert seen.snapshot()["watches"] == [], "expected a denial of no run in progress dropped"


class _Proxy:
    """The webhook's environment: a session for the owner the webhooks give, accounted
    as the read-only proxy accounts it."""

    def __init__(self, seen: record.Record) -> None:
        self.audit = audit.Audit(seen.reads_only())
        self.session: sessions.Session | None = None

    @contextlib.contextmanager
    def for_owner(self, owner: KubeObject) -> Iterator[Mapping[str, str]]:
        self.session = sessions.Session(owner=ownership.Owner.of(owner))
        yield {}


class _Ansible:
    """One task: a GET of a ConfigMap, then a GET of a Secret the API server denies."""

    def __init__(self, proxy: _Proxy) -> None:
        self._proxy = proxy

    def run(self, spec: ansible_spec.RunSpec, *, log: logs.BoundLogger) -> launch.RunResult:
        assert spec.on_event is not None
        spec.on_event({"event": "playbook_on_task_start", "event_data": {"task": "Read"}})
        assert self._proxy.session is not None
        session = self._proxy.session
        self._proxy.audit.account(session, method="GET", path="/api/v1/namespaces/ns1/configmaps/c")
        self._proxy.audit.account(
            session, method="GET", path="/api/v1/namespaces/ns1/secrets/s", status=403
        )
        return fakes.succeeded()


def _answer(tmp_path: Path, claimed: GVK) -> record.Record:
    """A validating webhook run for a review whose object claims ``claimed``."""
    (tmp_path / "roles" / "gadget" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "gadget" / "tasks" / "main.yml").write_text("---\n[]\n")
    path = tmp_path / "watches.yaml"
    path.write_text(
        f"- group: {GADGET.group}\n  version: v1\n  kind: Gadget\n  role: gadget\n"
        "  validation:\n    role: gadget\n"
    )
    (watch,) = watches.load(path, environ={}, base_dir=tmp_path)
    obj: dict[str, Any] = {
        "apiVersion": claimed.api_version,
        "kind": claimed.kind,
        "metadata": {"name": "g1", "namespace": "ns1"},
        "spec": {},
    }
    request = review.Request(
        uid="req-uid",
        operation="CREATE",
        obj=obj,
        old=None,
        user_info={},
        dry_run=False,
        namespace="ns1",
        name="g1",
    )
    seen = record.Record()
    proxy = _Proxy(seen)
    answerer = hooks.Hooks(
        watches=[watch],
        ansible=dataclasses.replace(sections.AnsibleSettings(), runner_dir=tmp_path / "runner"),
        runner=_Ansible(proxy),  # type: ignore[arg-type]
        environment=proxy,
        max_concurrent=1,
        rbac=seen,
    )
    assert watch.validation is not None
    answerer.answer(answerer.paths[watch.validation.path], request, deadline=time.monotonic() + 30)
    return seen


@pytest.mark.parametrize(
    "claimed",
    [
        pytest.param(CLAIMED, id="cluster-role-binding"),
        pytest.param(GVK("", "v1", "Secret"), id="secret"),
        pytest.param(GVK("*", "v1", "*"), id="wildcards"),
    ],
)
def test_a_review_claiming_another_kind_adds_no_key_to_the_record(
    tmp_path: Path, claimed: GVK
) -> None:
    seen = _answer(tmp_path, claimed)

    snapshot = seen.snapshot()
    keys = [(w["group"], w["kind"]) for w in snapshot["watches"]]
    assert set(keys) <= {(GADGET.group, "Gadget")}, (
        f"expected no record key but the watch's, saw {keys}"
    )
    found = derive.derive(snapshot)
    named = [d.kind for d in found.denied]
    assert set(named) <= {"Gadget"}, f"expected denials named for Gadget only, saw {named}"


def test_a_review_claiming_another_kind_is_recorded_under_the_watch(tmp_path: Path) -> None:
    seen = _answer(tmp_path, CLAIMED)

    (entry,) = seen.snapshot()["watches"]
    uses = [(u["resource"], u["verb"]) for u in entry["uses"] if u.get("allowed", True)]
    denied = [(d["resource"], d["verb"], d["task"]) for d in entry["denied"]]
    assert (entry["kind"], uses, denied) == (
        "Gadget",
        [("configmaps", "get")],
        [("secrets", "get", "Read")],
    ), f"expected the run's read and denial under Gadget, saw {entry}"
