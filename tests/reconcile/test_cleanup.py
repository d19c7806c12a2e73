"""A deleted CR's private data dir (extra vars, artifacts) does not outlive it."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.reconcile.fakes import (
    FakeClient,
    FakeRecorder,
    FakeRunner,
    make_reconciler,
    probe_object,
    request,
)

FINALIZER = (
    "  finalizer:\n    name: tests.playbook-operator.dev/cleanup\n    vars: {finalizing: true}\n"
)


def test_private_dir_is_removed_when_the_object_is_gone(tmp_path: Path) -> None:
    client = FakeClient(probe_object("gone"))
    runner = FakeRunner(tmp_path)
    reconciler = make_reconciler(tmp_path=tmp_path, client=client, runner=runner)
    reconciler.reconcile(request("gone"))
    other = runner.specs[0].private_data_dir.with_name("kept")
    other.mkdir()
    private = runner.specs[0].private_data_dir
    assert private.is_dir(), f"the run should have made {private}"

    client.obj = None
    reconciler.reconcile(request("gone"))
    assert not private.exists(), f"expected {private} removed once the CR is gone"
    assert other.is_dir(), "another CR's private dir must stay"


def test_private_dir_is_removed_after_the_finalizer_run(tmp_path: Path) -> None:
    obj = probe_object("fin")
    obj["metadata"]["finalizers"] = ["tests.playbook-operator.dev/cleanup"]
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    client = FakeClient(obj)
    runner = FakeRunner(tmp_path)
    reconciler = make_reconciler(
        tmp_path=tmp_path,
        client=client,
        runner=runner,
        events=FakeRecorder(),
        watch_extra=FINALIZER,
    )
    reconciler.reconcile(request("fin"))
    assert len(runner.specs) == 1, "the finalizer should have run"
    assert client.obj is not None and not client.obj["metadata"]["finalizers"], client.obj
    private = runner.specs[0].private_data_dir
    assert not private.exists(), f"expected {private} removed after the finalizer ran"


def test_the_managers_tmp_volume_is_bounded() -> None:
    manifest = Path(__file__).parents[2] / "config" / "manager" / "manager.yaml"
    documents = list(yaml.safe_load_all(manifest.read_text()))
    deployment = next(d for d in documents if d and d.get("kind") == "Deployment")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    empty_dir = volumes["tmp"].get("emptyDir") or {}
    assert empty_dir.get("sizeLimit"), f"expected a sizeLimit on the /tmp emptyDir, saw {empty_dir}"
