"""A watches.yaml with no entries loads as no watches: a new project starts from one.

operator-sdk's ansible-operator reads such a file as an empty list and runs with
nothing to reconcile; ``playbook-operator init`` writes one (only comments) and
``make run`` starts it before ``create api`` adds the first entry.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import runner
from runner.base import errors
from runner.config import watches

INIT_WATCHES = (
    Path(runner.__file__).parent / "tools" / "scaffold" / "templates" / "init" / "watches.yaml"
)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("", id="empty-file"),
        pytest.param("# nothing yet\n", id="only-comments"),
        pytest.param("---\n", id="only-document-start"),
        pytest.param("[]\n", id="empty-list"),
        pytest.param("---\n[]\n", id="empty-list-after-document-start"),
        pytest.param(INIT_WATCHES.read_text(encoding="utf-8"), id="init-template"),
    ],
)
def test_no_entries_load_as_no_watches(
    write_watches: Callable[[str], Path], project: Path, body: str
) -> None:
    path = write_watches(body)

    loaded = watches.load(path, environ={}, base_dir=project)

    assert loaded == [], f"expected no watches from {body!r}, saw {loaded!r}"


@pytest.mark.parametrize(
    ("body", "entry", "field"),
    [
        pytest.param("- {}\n", 1, "version", id="empty-entry"),
        pytest.param("[]\n# comment\n- version: v1\n", None, None, id="list-then-more-yaml"),
    ],
)
def test_an_invalid_entry_is_still_refused(
    write_watches: Callable[[str], Path],
    project: Path,
    body: str,
    entry: int | None,
    field: str | None,
) -> None:
    path = write_watches(body)

    with pytest.raises(errors.WatchesError) as caught:
        watches.load(path, environ={}, base_dir=project)

    error = caught.value
    assert (error.path, error.entry, error.field) == (str(path), entry, field), (
        f"expected file {path}, entry {entry}, field {field!r}; "
        f"saw {error.path}, {error.entry}, {error.field!r}: {error}"
    )
