"""Any watches.yaml loads or stops the runner with a WatchesError naming file and place."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from runner.base import errors
from runner.config import watches
from testkit import hostile
from tests.config.watches.conftest import make_role

FIELDS = (
    "group",
    "version",
    "kind",
    "role",
    "playbook",
    "vars",
    "finalizer",
    "reconcilePeriod",
    "manageStatus",
    "watchDependentResources",
    "watchClusterScopedResources",
    "maxConcurrentReconciles",
    "selector",
    "snakeCaseParameters",
    "markUnsafe",
    "blacklist",
    "validation",
    "mutation",
)


def entries() -> st.SearchStrategy[dict[str, Any]]:
    """Entries with real field names holding anything, and a valid core to vary from."""
    anything = hostile.values(max_leaves=6)
    core = st.fixed_dictionaries(
        {
            "group": st.just("cache.example.com"),
            "version": st.just("v1"),
            "kind": st.just("M"),
            "role": st.just("memcached"),
        }
    )
    noise = st.dictionaries(
        st.one_of(st.sampled_from(FIELDS), hostile.keys()), anything, max_size=4
    )
    return st.builds(lambda a, b: {**a, **b}, core, noise)


@given(
    doc=st.one_of(st.lists(entries(), max_size=3), hostile.values(max_leaves=6)),
    text=st.one_of(st.none(), st.text(max_size=80)),
)
def test_any_watches_file_loads_or_names_what_is_wrong(doc: Any, text: str | None) -> None:
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        make_role(base / "roles" / "memcached")
        path = base / "watches.yaml"
        path.write_text(text if text is not None else yaml.safe_dump(doc))
        try:
            watches.load(path, environ={}, base_dir=base)
        except errors.WatchesError as exc:
            assert str(path) in str(exc), f"the error does not name the file: {exc}"
