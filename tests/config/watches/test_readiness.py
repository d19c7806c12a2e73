"""watchDependentReadiness: which child kinds' readiness changes reconcile their owner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.base import errors
from runner.config import watches

HEAD = "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n"


@pytest.mark.parametrize(
    ("lines", "kinds"),
    [
        pytest.param("", frozenset(), id="absent-none"),
        pytest.param("  watchDependentReadiness: []\n", frozenset(), id="empty-none"),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps, kind: Deployment}\n",
            frozenset({"Deployment.apps"}),
            id="deployment",
        ),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps, kind: StatefulSet}\n"
            "    - {kind: Pod}\n",
            frozenset({"StatefulSet.apps", "Pod"}),
            id="core-group-by-default",
        ),
    ],
)
def test_readiness_kinds_are_read(
    lines: str, kinds: frozenset[str], write_watches: Callable[[str], Path], project: Path
) -> None:
    watch = watches.load(write_watches(HEAD + lines), environ={}, base_dir=project)[0]
    assert watch.watch_dependent_readiness == kinds, (
        f"expected {set(kinds)}, saw {set(watch.watch_dependent_readiness)}"
    )


@pytest.mark.parametrize(
    ("lines", "field", "problem"),
    [
        pytest.param(
            "  watchDependentReadiness: {group: apps, kind: Deployment}\n",
            "watchDependentReadiness",
            "expected a list",
            id="not-a-list",
        ),
        pytest.param(
            "  watchDependentReadiness: [Deployment]\n",
            "watchDependentReadiness[0]",
            "expected a mapping of group, kind",
            id="item-not-a-mapping",
        ),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps}\n",
            "watchDependentReadiness[0].kind",
            "required",
            id="kind-missing",
        ),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps, kind: ''}\n",
            "watchDependentReadiness[0].kind",
            "must not be empty",
            id="kind-empty",
        ),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps, kind: Deployment, version: v1}\n",
            "watchDependentReadiness[0].version",
            "unknown key",
            id="unknown-key",
        ),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps, kind: 1}\n",
            "watchDependentReadiness[0].kind",
            "expected a string",
            id="kind-not-a-string",
        ),
        pytest.param(
            "  watchDependentReadiness:\n    - {group: apps, kind: Deployment}\n"
            "    - {group: apps, kind: Deployment}\n",
            "watchDependentReadiness[1]",
            "same group and kind as item 0",
            id="duplicate",
        ),
        pytest.param(
            "  watchDependentResources: false\n"
            "  watchDependentReadiness:\n    - {group: apps, kind: Deployment}\n",
            "watchDependentReadiness",
            "needs watchDependentResources: true",
            id="children-not-watched",
        ),
        pytest.param(
            "  blacklist:\n    - {group: apps, version: v1, kind: Deployment}\n"
            "  watchDependentReadiness:\n    - {group: apps, kind: Deployment}\n",
            "watchDependentReadiness[0]",
            "Deployment.apps is in the blacklist",
            id="blacklisted",
        ),
    ],
)
def test_an_invalid_readiness_entry_names_file_entry_and_field(
    lines: str, field: str, problem: str, write_watches: Callable[[str], Path], project: Path
) -> None:
    path = write_watches(HEAD + lines)
    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=project)
    error = caught.value
    assert (error.path, error.entry, error.field) == (str(path), 1, field), str(error)
    assert problem in error.problem, f"expected {problem!r} in {error.problem!r}"
