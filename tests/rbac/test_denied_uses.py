"""A request the API server denied is a denial in the RBAC record, and its use is not
``allowed``: what reads the record (``GET /debug/rbac``, ``playbook-operator rbac``)
never takes a 403 for a grant. A use it also let through, in another request, is."""

from __future__ import annotations

import pytest

from runner.kube.types import GVK
from runner.proxy import audit, ownership, sessions
from runner.rbac import record
from runner.tools.rbac import derive

PROBE = GVK("tests.playbook-operator.dev", "v1", "Probe")
PATCH = "/apis/apps/v1/namespaces/ns1/deployments/web"
OWNER = ownership.Owner(gvk=PROBE, name="p1", namespace="ns1", uid="uid-1")


@pytest.mark.parametrize(
    ("answers", "granted"),
    [
        pytest.param([403], False, id="denied"),
        pytest.param([403, 403], False, id="denied-twice"),
        pytest.param([403, 200], True, id="denied-then-let-through"),
        pytest.param([200, 403], True, id="let-through-then-denied"),
        pytest.param([404], True, id="authorized-not-found"),
    ],
)
def test_a_use_is_a_request_the_api_server_let_through(answers: list[int], granted: bool) -> None:
    seen = record.Record()
    run = (PROBE, "ns1", "p1")
    seen.run_started(run)
    seen.task_started(run, "Label the web Deployment")
    accounts = audit.Audit(seen)
    for status in answers:
        accounts.account(sessions.Session(owner=OWNER), method="PATCH", path=PATCH, status=status)

    needed = derive.derive(seen.snapshot()).needed()
    assert (("apps", "deployments", "patch") in needed) is granted, (
        f"answers {answers}: expected patch {'granted' if granted else 'not granted'}, "
        f"saw rules for {sorted(needed)}"
    )
    (watch,) = seen.snapshot()["watches"]
    uses = [(u["resource"], u["verb"], u.get("allowed")) for u in watch["uses"]]
    expected = [("deployments", "patch", granted)]
    assert uses == expected, f"answers {answers}: expected uses {expected}, saw {uses}"
    if 403 in answers:
        denied = [(d["resource"], d["verb"], d["task"]) for d in watch["denied"]]
        expected_denied = [("deployments", "patch", "Label the web Deployment")]
        assert denied == expected_denied, f"expected the 403 kept, saw {denied}"
