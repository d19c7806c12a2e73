"""CR names and namespaces become directories: nothing in them may leave the runner dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from runner.base import errors
from runner.config import sections, watches
from runner.kube import errors as kube_errors
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, ObjectKey
from runner.reconcile import reconciler
from tests.runner.support import PROBE, probe


def make_reconciler(obj: KubeObject, tmp_path: Path) -> reconciler.Reconciler:
    (tmp_path / "roles" / "probe").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n  role: probe\n"
    )
    watch = watches.load(tmp_path / "watches.yaml", environ={}, base_dir=tmp_path)[0]

    def cache(key: ObjectKey) -> KubeObject | None:
        return obj

    # Never reached: the check comes before any API call or Ansible run.
    unused = cast(Any, None)
    return reconciler.Reconciler(
        watch=watch,
        reconcile=sections.ReconcileSettings(),
        ansible=sections.AnsibleSettings(runner_dir=tmp_path),
        client=unused,
        runner=unused,
        environment=reconciler.StaticEnvironment(None),
        cache=cache,
    )


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        pytest.param("ns", "..", id="dot-dot-name"),
        pytest.param("..", "x", id="dot-dot-namespace"),
        pytest.param("ns", "a/../../b", id="slash-in-name"),
        pytest.param("ns", ".", id="dot-name"),
    ],
)
def test_names_unfit_for_a_path_are_refused(namespace: str, name: str, tmp_path: Path) -> None:
    obj = probe(name, namespace, {})
    obj["metadata"]["resourceVersion"] = "1"
    request = reconciler.Request(gvk=PROBE, namespace=namespace, name=name)
    with pytest.raises(errors.ReconcileError, match="unfit for a path"):
        make_reconciler(obj, tmp_path).reconcile(request)
    assert not any(tmp_path.glob("**/artifacts")), "nothing may be written for such a name"


@pytest.mark.parametrize(
    "name", [pytest.param("..", id="dot-dot"), pytest.param("a%2Fb", id="escaped")]
)
def test_the_api_server_refuses_such_names_too(
    name: str, kube: Client, namespace: str, probe_crd: GVK
) -> None:
    with pytest.raises(kube_errors.ApiError) as refused:
        kube.create(PROBE, probe(name, namespace, {}), namespace=namespace)
    assert refused.value.status in (400, 404, 422), f"expected a refusal, saw {refused.value}"
