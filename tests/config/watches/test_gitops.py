"""kstatusConditions and prune: the GitOps options of a watch (docs/gitops.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.base import errors
from runner.config import watches

HEAD = "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param("", (True, False), id="defaults-kstatus-on-prune-off"),
        pytest.param("  kstatusConditions: false\n", (False, False), id="kstatus-off"),
        pytest.param("  prune: true\n", (True, True), id="prune-on"),
    ],
)
def test_gitops_options_are_read(
    lines: str,
    expected: tuple[bool, bool],
    write_watches: Callable[[str], Path],
    project: Path,
) -> None:
    watch = watches.load(write_watches(HEAD + lines), environ={}, base_dir=project)[0]
    seen = (watch.kstatus_conditions, watch.prune)
    assert seen == expected, f"expected (kstatus_conditions, prune) {expected}, saw {seen}"


@pytest.mark.parametrize("key", ["prune", "kstatusConditions"])
def test_a_non_boolean_option_names_its_field(
    key: str, write_watches: Callable[[str], Path], project: Path
) -> None:
    path = write_watches(HEAD + f"  {key}: sometimes\n")
    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=project)
    error = caught.value
    assert (error.entry, error.field) == (1, key), f"expected entry 1, field {key}: {error}"
    assert "expected a boolean" in error.problem, error.problem


def test_a_misspelt_option_is_refused_with_a_hint(
    write_watches: Callable[[str], Path], project: Path
) -> None:
    path = write_watches(HEAD + "  prunes: true\n")
    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=project)
    assert "did you mean 'prune'?" in caught.value.problem, caught.value.problem
