"""Objects nested from 100 levels to the API server's limit never blind a runner.

Real runner, embedded cluster. The Probe CRD keeps unknown fields in ``spec``, and so
does the PlainProbe CRD (tests/runner/fixtures/plain-crd.yaml), used here as a child
kind: a role makes one PlainProbe per Probe, so the runner watches PlainProbes as
dependents, and the test adds deep PlainProbes owned by the Probe. Every depth of the
sweep lands in one of three places:

* at most :data:`runner.watch.strings.MAX_DEPTH` levels (100, 250): the informer holds
  the object and hands it on. A primary reaches the reconcile, whose Ansible guard
  refuses extra vars nested deeper than 98 levels with a Failure condition; a child's
  change reaches its owner;
* deeper, but still decoded by ``json.loads`` (500): the informer does not hold it;
  before, sharing its strings recursed past Python's limit on every event (a traceback
  each time, no Failure); now it takes the skip path;
* deeper than ``json.loads`` decodes (1000, 5000): the skip path, as before.

Whatever the depth, the runner stays up and a control Probe made afterwards reaches
Successful; the object gets at most one warning or error line, and no traceback is
logged. Deep objects are sent as text (no deep JSON is encoded or decoded here) and read
back with kubectl's JSONPath.

The API server's limit: Go's JSON decoder refuses a document nested deeper than 10000
levels ("exceeded max depth"), and the object the server stores includes
managedFields, whose ``fieldsV1`` repeats the spec's nesting six levels down
(metadata, managedFields, entry, fieldsV1, f:spec): a spec of 9994 levels is the
deepest accepted, 9995 is refused. The sweep stops at 5000 on purpose: objects stored
at the limit broke the API server's own watch cache for their kind when it listed them
again after a restart ("storage is (re)initializing: ... exceeded max depth", 429 for
every client of the kind until they were deleted from etcd), which would break every
other test sharing the cluster.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from runner.kube.types import GVK
from testkit.harness import OperatorProcess
from tests.runner.support import PROBE, StartOperator, probe, wait_condition

PLAIN = GVK(PROBE.group, "v1", "PlainProbe")
PLAIN_CRD = Path(__file__).parents[2] / "runner" / "fixtures" / "plain-crd.yaml"
#: Spec depths the informer holds: the stored object nests six levels more (managedFields,
#: see above), so 250 is the deepest spec within runner.watch.strings.MAX_DEPTH (256).
HELD = frozenset({100, 250})
DEPTHS = [
    pytest.param(100, id="100-held"),
    pytest.param(250, id="250-held"),
    pytest.param(500, id="500-decoded-not-held"),
    pytest.param(1000, id="1000-undecodable"),
    pytest.param(5000, id="5000-undecodable"),
]
#: The logger of the controller's reconcile results.
RECONCILE_LOGGER = "runner.controller"
#: The child-making role: one shallow PlainProbe per Probe, created through the proxy,
#: so that the runner starts a dependent PlainProbe informer.
ANCHOR_ROLE = f"""---
- name: Write the anchor PlainProbe
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: {PLAIN.api_version}
      kind: PlainProbe
      metadata:
        name: "{{{{ ansible_operator_meta.name }}}}-anchor"
        namespace: "{{{{ ansible_operator_meta.namespace }}}}"
      spec:
        size: 1
"""


@pytest.fixture(scope="module")
def plain_crd(cluster: Any) -> GVK:
    cluster.kubectl("apply", "-f", str(PLAIN_CRD))
    cluster.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", f"crd/plainprobes.{PLAIN.group}"
    )
    return PLAIN


def nested(levels: int) -> str:
    return '{"a":' * levels + '"bottom"' + "}" * levels


def create_raw(
    kube: Client, *, gvk: GVK, namespace: str, metadata: dict[str, Any], spec: str
) -> None:
    """Create an object whose spec is JSON text: the client sends bytes as they are."""
    meta = json.dumps({**metadata, "namespace": namespace})
    body = (
        f'{{"apiVersion":"{gvk.api_version}","kind":"{gvk.kind}","metadata":{meta},"spec":{spec}}}'
    )
    path = kube.resource(gvk).path(namespace=namespace)
    kube.send("POST", path, body=body.encode())


def failure_of(cluster: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """A Probe's Failure condition, read with kubectl's JSONPath (no deep JSON here)."""
    out = cluster.kubectl(
        "get", f"probes.{PROBE.group}", name, "-n", namespace,
        "-o", "jsonpath={.status.conditions}",
    ).stdout  # fmt: skip
    conditions = json.loads(out) if out.strip() else []
    return next((c for c in conditions if c.get("type") == "Failure"), None)


def loud_lines(operator: OperatorProcess, obj: str) -> list[dict[str, Any]]:
    """Warning and error lines naming ``obj`` (namespace/name), but the reconcile's.

    A held primary fails its reconcile (the Ansible guard), which the controller retries
    with backoff and logs at error each time: that is the reconcile's account of a run,
    not the watch path's, and it is left out here.
    """
    return [
        line
        for line in list(operator.lines)
        if line.get("object") == obj
        and line.get("level") in ("warning", "error", "critical")
        and line.get("logger") != RECONCILE_LOGGER
    ]


def assert_quiet(operator: OperatorProcess, obj: str) -> None:
    """At most one warning/error line of the watch path names ``obj``; no traceback
    anywhere in the log."""
    loud = loud_lines(operator, obj)
    assert len(loud) <= 1, (
        f"expected at most one warning/error line naming {obj}, saw {len(loud)}: "
        f"{[(line.get('level'), line.get('msg')) for line in loud]}"
    )
    traced = [line[:200] for line in list(operator.raw) if "Traceback (most recent call" in line]
    assert not traced, f"expected no traceback in the log, saw {len(traced)}: {traced[:3]}"
    assert operator.returncode is None, f"the runner exited with {operator.returncode}"


def reconciled(kube: Client, operator: OperatorProcess, namespace: str, name: str) -> None:
    wait_condition(
        kube,
        namespace=namespace,
        name=name,
        kind="Successful",
        status="True",
        timeout=60,
        operator=operator,
    )


@pytest.mark.parametrize("levels", DEPTHS)
def test_a_deep_primary_is_marked_failed_and_the_runner_serves_the_next(
    levels: int, kube: Client, cluster: Any, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: probe\n"
    )
    create_raw(kube, gvk=PROBE, namespace=namespace, metadata={"name": "deep"}, spec=nested(levels))

    failure = operator.eventually(
        lambda: failure_of(cluster, namespace, "deep"),
        until=lambda c: bool(c and c.get("status") == "True"),
        describe=f"Failure=True on {namespace}/deep ({levels} levels)",
        timeout=60,
    )
    assert failure is not None
    message = str(failure.get("message"))
    if levels in HELD:  # handed on: the reconcile's Ansible guard refuses it
        named = re.search(r"nests deeper than (\d+) levels", message)
        assert named and int(named.group(1)) < levels, (
            f"expected the guard's 'nests deeper than N levels' (N < {levels}), saw {message!r}"
        )
    else:  # the informer's skip path
        named = re.search(r"nesting (\d+) levels deep", message)
        assert named and int(named.group(1)) > levels, (
            f"expected 'nesting N levels deep' (N > {levels}), saw {message!r}"
        )

    kube.create(PROBE, probe("control", namespace, {"message": "c"}), namespace=namespace)
    reconciled(kube, operator, namespace, "control")
    assert_quiet(operator, f"{namespace}/deep")


@pytest.fixture
def anchor_role(plain_crd: GVK, tmp_path: Path) -> Path:
    """The child-making role, on disk (watches.yaml names it by its absolute path)."""
    role = tmp_path / "roles" / "anchor"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text(ANCHOR_ROLE)
    return role


@pytest.mark.parametrize("levels", DEPTHS)
def test_a_deep_child_is_held_or_skipped_and_its_informer_goes_on(
    levels: int, kube: Client, namespace: str, start_operator: StartOperator, anchor_role: Path
) -> None:
    operator = start_operator(
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: {anchor_role}\n"
    )
    kube.create(PROBE, probe("owner", namespace, {}), namespace=namespace)
    reconciled(kube, operator, namespace, "owner")
    operator.eventually(
        lambda: operator.logged("informer synced", kind="PlainProbe"),
        describe="the dependent PlainProbe informer to sync",
    )
    owner = kube.get(PROBE, name="owner", namespace=namespace)
    owned = {
        "ownerReferences": [
            {
                "apiVersion": PROBE.api_version,
                "kind": PROBE.kind,
                "name": "owner",
                "uid": owner["metadata"]["uid"],
            }
        ]
    }
    create_raw(
        kube,
        gvk=PLAIN,
        namespace=namespace,
        metadata={"name": "deep", **owned},
        spec=nested(levels),
    )
    create_raw(
        kube, gvk=PLAIN, namespace=namespace, metadata={"name": "marker", **owned}, spec="{}"
    )
    # Changes (a label: no new generation) reach the owner through the dependent predicate.
    # The informer takes events in order: the marker's change is seen after the deep one.
    label = {"metadata": {"labels": {"touched": "yes"}}}
    for name in ("deep", "marker"):
        path = kube.resource(PLAIN).path(namespace=namespace, name=name)
        kube.send("PATCH", path, body=label, content_type="application/merge-patch+json")
    operator.eventually(
        lambda: operator.logged("dependent changed", child="marker"),
        describe="the marker's change to reach its owner (after the deep child's)",
    )

    heard = operator.logged("dependent changed", child="deep")
    skipped = [
        line
        for line in loud_lines(operator, f"{namespace}/deep")
        if line.get("msg") == "object skipped: it could not be decoded"
    ]
    if levels in HELD:
        assert heard, f"expected the {levels}-level child's change to reach its owner"
        assert not skipped, f"expected the {levels}-level child held, saw it skipped: {skipped}"
    else:
        assert not heard, f"expected the {levels}-level child skipped, saw its change handled"
        assert len(skipped) == 1, f"expected one skip line for the child, saw {skipped}"
        named = re.search(r"nesting (\d+) levels deep", str(skipped[0].get("reason")))
        assert named and int(named.group(1)) > levels, f"depth not named: {skipped[0]}"

    kube.create(PROBE, probe("control", namespace, {}), namespace=namespace)
    reconciled(kube, operator, namespace, "control")
    assert_quiet(operator, f"{namespace}/deep")
