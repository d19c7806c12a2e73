"""A CR waits after a restart only on positive evidence (runner.reconcile.startup, .evidence).

A run is recorded as the reconciler does it (begin, the proxy's sightings, take, record)
with the inputs digested from a real watches.yaml and a real role on disk; then something
changes while the runner is away and the spread must run the CR at once. The last cases
show what still waits: nothing changed, or only what Kubernetes' own controllers write.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.config import entry, watches
from runner.kube.types import GVK, KubeObject
from runner.reconcile import evidence, startup

CM = GVK("", "v1", "ConfigMap")
DEPLOY = GVK("apps", "v1", "Deployment")
RUNTIME = "sha256:runtime-a"


def child(gvk: GVK, name: str, *, gen: int | None = None, **meta: Any) -> KubeObject:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"u-{name}"}
    metadata.update({"resourceVersion": "5", **meta})
    if gen is not None:
        metadata["generation"] = gen
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": metadata}


CHILDREN = {
    "m-echo": (CM, child(CM, "m-echo")),
    "m": (DEPLOY, child(DEPLOY, "m", gen=3, labels={"app": "m"})),
}


class Project:
    """A watches.yaml and its role in a temporary directory, as the runner loads them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.role = root / "roles" / "echo"
        (self.role / "tasks").mkdir(parents=True)
        (self.role / "defaults").mkdir()
        (self.role / "tasks" / "main.yml").write_text("- name: Echo\n  debug: {msg: hi}\n")
        (self.role / "defaults" / "main.yml").write_text("message: hi\n")
        self.write_watches("")
        self.runtime = RUNTIME

    def write_watches(self, extra: str) -> None:
        (self.root / "watches.yaml").write_text(
            "- version: v1\n  group: example.com\n  kind: Echo\n  role: echo\n" + extra
        )

    def watch(self) -> entry.Watch:
        return watches.load(self.root / "watches.yaml", environ={}, base_dir=self.root)[0]

    def inputs(self) -> startup.Current:
        """What the runner's wiring gives: the watch read afresh, the runtime digested."""
        return evidence.Inputs(self.watch, runtime=lambda: self.runtime).current


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def run(inputs: startup.Current, sightings: list[tuple[GVK, KubeObject]]) -> Any:
    """One successful run as the reconciler records it: the status value it writes."""
    children = startup.Children().for_watch(inputs)
    children.begin("owner-uid")
    for gvk, obj in sightings:
        children.saw("owner-uid", gvk=gvk, obj=obj)
    return startup.record(children.take("owner-uid"))


def cr(kept: Any) -> KubeObject:
    status: dict[str, Any] = {
        "observedGeneration": 2,
        "conditions": [{"type": "Successful", "status": "True"}],
    }
    if kept is not None:
        status[startup.STATUS_FIELD] = kept
    return {"metadata": {"name": "m", "namespace": "ns", "generation": 2}, "status": status}


def spread(inputs: startup.Current | None, live: dict[str, KubeObject]) -> startup.Spread:
    shared = startup.Spread(
        window=100, rate=1, read=lambda c, _owner: live.get(c.name), rng=random.Random(7)
    )
    return shared if inputs is None else shared.for_watch(inputs)


def live_children() -> dict[str, KubeObject]:
    return {name: obj for name, (_, obj) in CHILDREN.items()}


def edit_role(project: Project) -> None:
    (project.role / "tasks" / "main.yml").write_text("- name: Echo\n  debug: {msg: bye}\n")


def add_role_file(project: Project) -> None:
    (project.role / "templates").mkdir()
    (project.role / "templates" / "cm.yaml.j2").write_text("kind: ConfigMap\n")


def change_period(project: Project) -> None:
    project.write_watches("  reconcilePeriod: 5m\n")


def change_vars(project: Project) -> None:
    project.write_watches("  vars:\n    replicas: 2\n")


def change_finalizer_vars(project: Project) -> None:
    project.write_watches("  finalizer:\n    name: echo.example.com/fin\n    vars: {state: gone}\n")


def change_runtime(project: Project) -> None:
    project.runtime = "sha256:runtime-b"  # another runtime, ansible-core or image


Change = Callable[[Project], None]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(edit_role, id="role-file-edited"),
        pytest.param(add_role_file, id="role-file-added"),
        pytest.param(change_period, id="watches-entry-setting-changed"),
        pytest.param(change_vars, id="watch-vars-changed"),
        pytest.param(change_finalizer_vars, id="finalizer-vars-changed"),
        pytest.param(change_runtime, id="runtime-or-image-changed"),
    ],
)
def test_a_changed_input_runs_the_cr_at_once(project: Project, change: Change) -> None:
    if change is change_finalizer_vars:  # the record was made with a finalizer already
        project.write_watches(
            "  finalizer:\n    name: echo.example.com/fin\n    vars: {state: absent}\n"
        )
    kept = run(project.inputs(), list(CHILDREN.values()))
    before = spread(project.inputs(), live_children()).delay(cr(kept))
    assert before is not None, f"expected the unchanged CR to wait (the control), got {before}"
    change(project)
    got = spread(project.inputs(), live_children()).delay(cr(kept))
    assert got is None, f"expected no delay after {change.__name__}, got {got}"


def test_a_record_without_inputs_defers_nothing(project: Project) -> None:
    # Today's record: children only. Nothing says the role, entry or runtime are the same.
    kept = {
        "digest": startup.digest(
            {
                startup.Child(gvk.api_version, gvk.kind, "ns", name): startup.version_of(obj)
                for name, (gvk, obj) in CHILDREN.items()
            }
        ),
        "objects": sorted(
            f"{gvk.api_version}/{gvk.kind}/ns/{name}" for name, (gvk, _) in CHILDREN.items()
        ),
    }
    got = spread(project.inputs(), live_children()).delay(cr(kept))
    assert got is None, f"expected a record without inputs to run the CR at once, got {got}"


@pytest.mark.parametrize(
    "sightings",
    [
        # No proxy: nothing reports a child, the run's record is empty.
        pytest.param([], id="inject-owner-ref-false"),
        # The role used its own kubeconfig (or kubectl): the proxy saw nothing either.
        pytest.param([], id="children-reached-outside-the-proxy"),
    ],
)
def test_a_run_that_touched_no_child_through_the_proxy_keeps_no_record(
    project: Project, sightings: list[tuple[GVK, KubeObject]]
) -> None:
    kept = run(project.inputs(), sightings)
    assert kept is None, f"expected no record from a run the proxy saw nothing of, saw {kept}"


def test_an_empty_record_left_by_an_earlier_version_runs_the_cr_at_once(project: Project) -> None:
    kept = {"digest": startup.digest({}), "objects": []}  # what a proxy-less run used to write
    got = spread(project.inputs(), {}).delay(cr(kept))
    assert got is None, f"expected an empty record to prove nothing, got a delay of {got}"


def test_inputs_that_cannot_be_digested_keep_no_record(project: Project) -> None:
    project.runtime = None  # type: ignore[assignment]  # ansible-core not found
    kept = run(project.inputs(), list(CHILDREN.values()))
    assert kept is None, f"expected no record without the runtime's digest, saw {kept}"


def test_the_shared_spread_without_inputs_defers_nothing(project: Project) -> None:
    kept = run(project.inputs(), list(CHILDREN.values()))
    got = spread(None, live_children()).delay(cr(kept))
    assert got is None, f"expected no delay when the watch's inputs are unknown, got {got}"


def relabelled(obj: KubeObject, **meta: Any) -> KubeObject:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": "77", **meta}}


DEPLOYMENT = CHILDREN["m"][1]


@pytest.mark.parametrize(
    ("live", "waits"),
    [
        pytest.param(
            relabelled(DEPLOYMENT, labels={"app": "m", "tier": "x"}), False, id="label-added"
        ),
        pytest.param(relabelled(DEPLOYMENT, labels={}), False, id="label-removed"),
        pytest.param(
            relabelled(DEPLOYMENT, annotations={"team": "b"}), False, id="annotation-added"
        ),
        pytest.param(
            relabelled(DEPLOYMENT, annotations={"deployment.kubernetes.io/revision": "2"}),
            True,
            id="controller-annotation-only",
        ),
        pytest.param(relabelled(DEPLOYMENT), True, id="status-only"),
    ],
)
def test_metadata_drift_on_a_child_with_a_generation(
    project: Project, live: KubeObject, waits: bool
) -> None:
    kept = run(project.inputs(), list(CHILDREN.values()))
    got = spread(project.inputs(), {**live_children(), "m": live}).delay(cr(kept))
    expected = "a delay" if waits else "no delay (run at once)"
    assert (got is not None) == waits, f"expected {expected}, got {got}"


def test_a_changed_role_file_is_read_again_not_served_from_the_stat_cache(
    project: Project,
) -> None:
    inputs = project.inputs()
    first = inputs()
    main = project.role / "tasks" / "main.yml"
    main.write_text(main.read_text().replace("hi", "ho"))  # same size: mtime and ctime move
    second = inputs()
    assert first and second and first["content"] != second["content"], (
        f"expected the content digest to move with the file, saw {first} then {second}"
    )


def test_a_role_past_the_bound_gives_no_digest(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "MAX_FILES", 1)
    assert project.inputs()() is None, "expected no digest for a role over the file bound"


def test_the_runtime_digest_names_the_installed_runtime() -> None:
    assert (evidence.runtime_digest() or "").startswith("sha256:"), (
        f"expected a digest of this runtime and its ansible-core, saw {evidence.runtime_digest()}"
    )
