"""Which watch a previewed CR belongs to, and what is said when none does."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.config import watches
from runner.tools.preview import target
from runner.tools.preview.target import PreviewError
from tests.cli.settings_from import one_watch

CR = {"apiVersion": "other.io/v1", "kind": "Thing", "metadata": {"name": "t"}}


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        pytest.param(False, "watches.yaml has no entries", id="no-entries"),
        pytest.param(True, "watched: g.io/v1 K", id="another-kind"),
    ],
)
def test_a_cr_no_watch_names_is_refused_with_what_is_watched(
    tmp_path: Path, entries: bool, said: str
) -> None:
    loaded = watches.load(one_watch(tmp_path), environ={}, base_dir=tmp_path) if entries else []
    with pytest.raises(PreviewError) as raised:
        target.watch_for(CR, loaded=loaded, path=tmp_path / "cr.yaml")
    message = str(raised.value)
    assert "no watch for other.io/v1 Thing" in message and said in message, (
        f"expected the kind and {said!r} in the error, got {message!r}"
    )


def test_the_watch_of_the_crs_kind_is_found(tmp_path: Path) -> None:
    loaded = watches.load(one_watch(tmp_path), environ={}, base_dir=tmp_path)
    cr = {"apiVersion": "g.io/v1", "kind": "K", "metadata": {"name": "k"}}
    found = target.watch_for(cr, loaded=loaded, path=tmp_path / "cr.yaml")
    assert found.gvk.kind == "K", f"expected the watch of K, got {found.gvk}"
