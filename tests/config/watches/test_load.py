"""Loading valid files: every key read as operator-sdk reads it, and its defaults."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.config import entry, roles, selector, watches
from runner.kube import types as kube

FULL = Path(__file__).parent / "fixtures" / "full"
MEMCACHED = kube.GVK(group="cache.example.com", version="v1alpha1", kind="Memcached")


def test_full_schema_round_trip() -> None:
    loaded = watches.load(FULL / "watches.yaml", environ={}, base_dir=FULL)

    roles_dir = FULL / "roles"
    expected = [
        entry.Watch(
            gvk=MEMCACHED,
            role=roles.Role(name="memcached", roles_path=roles_dir, path=roles_dir / "memcached"),
            playbook=None,
            vars={"size": 3, "since": "2024-01-01"},
            reconcile_period=3720.0,
            manage_status=False,
            watch_dependent_resources=False,
            watch_cluster_scoped_resources=True,
            max_runner_artifacts=5,
            finalizer=entry.Finalizer(
                name="cache.example.com/finalizer",
                role=roles.Role(name="cleanup", roles_path=roles_dir, path=roles_dir / "cleanup"),
                playbook=None,
                vars={"state": "absent"},
            ),
            blacklist=frozenset(
                {
                    kube.GVK(group="apps", version="v1", kind="ReplicaSet"),
                    kube.GVK(group="", version="v1", kind="Pod"),
                }
            ),
            selector=selector.LabelSelector(
                match_labels=(("tier", "cache"),),
                match_expressions=(
                    selector.Requirement(
                        key="env", operator=selector.Operator.IN, values=("prod", "staging")
                    ),
                    selector.Requirement(
                        key="example.com/skip", operator=selector.Operator.DOES_NOT_EXIST
                    ),
                ),
            ),
            snake_case_parameters=False,
            mark_unsafe=True,
            watch_annotations_changes=True,
        ),
        entry.Watch(
            gvk=kube.GVK(group="", version="v1", kind="Secret"),
            role=None,
            playbook=FULL / "playbooks" / "secret.yml",
            vars={},
            reconcile_period=None,
            manage_status=True,
            watch_dependent_resources=True,
            watch_cluster_scoped_resources=False,
            max_runner_artifacts=20,
            finalizer=entry.Finalizer(
                name="finalizer.example.com", role=None, playbook=None, vars={"finalizing": True}
            ),
            blacklist=frozenset(),
            selector=selector.LabelSelector(),
            snake_case_parameters=True,
            mark_unsafe=True,
            watch_annotations_changes=False,
        ),
    ]
    assert loaded == expected, f"expected\n{expected}\nsaw\n{loaded}"


def test_defaults_are_operator_sdks(write_watches: Callable[[str], Path], project: Path) -> None:
    path = write_watches(
        """
        - group: cache.example.com
          version: v1alpha1
          kind: Memcached
          role: memcached
        """
    )

    (watch,) = watches.load(path, environ={}, base_dir=project)

    seen = {
        "vars": dict(watch.vars),
        "reconcile_period": watch.reconcile_period,
        "manage_status": watch.manage_status,
        "watch_dependent_resources": watch.watch_dependent_resources,
        "watch_cluster_scoped_resources": watch.watch_cluster_scoped_resources,
        "max_runner_artifacts": watch.max_runner_artifacts,
        "finalizer": watch.finalizer,
        "blacklist": watch.blacklist,
        "selector_is_empty": watch.selector.is_empty,
        "snake_case_parameters": watch.snake_case_parameters,
        "mark_unsafe": watch.mark_unsafe,
        "watch_annotations_changes": watch.watch_annotations_changes,
    }
    expected: dict[str, Any] = {
        "vars": {},
        "reconcile_period": None,
        "manage_status": True,
        "watch_dependent_resources": True,
        "watch_cluster_scoped_resources": False,
        "max_runner_artifacts": 20,
        "finalizer": None,
        "blacklist": frozenset(),
        "selector_is_empty": True,
        "snake_case_parameters": True,
        "mark_unsafe": True,
        "watch_annotations_changes": False,
    }
    assert seen == expected, f"expected defaults {expected}, saw {seen}"


@pytest.mark.parametrize(
    ("extra", "attribute", "expected"),
    [
        pytest.param("reconcilePeriod: 0", "reconcile_period", None, id="period-plain-0"),
        pytest.param("reconcilePeriod: '0s'", "reconcile_period", None, id="period-0s"),
        pytest.param("reconcilePeriod: 500ms", "reconcile_period", 0.5, id="period-500ms"),
        pytest.param("reconcilePeriod: '0'", "reconcile_period", None, id="period-string-0"),
        pytest.param("maxRunnerArtifacts: 0", "max_runner_artifacts", 20, id="artifacts-0-is-20"),
        pytest.param("manageStatus: null", "manage_status", True, id="null-is-default"),
        pytest.param("manageStatus: no", "manage_status", False, id="yaml-1.1-no-is-false"),
        pytest.param("vars: null", "vars", {}, id="null-vars"),
    ],
)
def test_zero_and_null_mean_the_default(
    write_watches: Callable[[str], Path], project: Path, extra: str, attribute: str, expected: Any
) -> None:
    path = write_watches(f"- {{version: v1, kind: Secret, role: memcached, {extra}}}\n")

    (watch,) = watches.load(path, environ={}, base_dir=project)

    seen = getattr(watch, attribute)
    assert seen == expected, f"expected {attribute}={expected!r}, saw {seen!r}"


def test_playbook_path_is_resolved_against_base_dir(
    write_watches: Callable[[str], Path], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_watches("- {version: v1, kind: Secret, playbook: playbook.yml}\n")
    monkeypatch.chdir(project)

    explicit = watches.load(path, environ={}, base_dir=project)[0].playbook
    from_cwd = watches.load(path, environ={})[0].playbook

    expected = project / "playbook.yml"
    assert explicit == expected, f"expected {expected}, saw {explicit}"
    assert from_cwd == expected, f"expected {expected} (from the working directory), saw {from_cwd}"


def test_watches_are_hashable_values() -> None:
    loaded = watches.load(FULL / "watches.yaml", environ={}, base_dir=FULL)

    assert len(set(loaded)) == 2, f"expected 2 distinct hashable watches, saw {loaded}"
    with pytest.raises(TypeError):
        loaded[0].vars["size"] = 4  # type: ignore[index]
