"""What warm runs take over from earlier runs is only ever what those files still say."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from runner import warm
from tests.warm.conftest import ROLES, Run, outputs, ready, started


@pytest.fixture
def roles(tmp_path: Path) -> Path:
    """An editable copy of the fixture role ``reuse``."""
    target = tmp_path / "roles"
    shutil.copytree(ROLES / "reuse", target / "reuse")
    return target


def probe(run: Run, roles: Path) -> str:
    result = run("reuse", roles_path=(roles,))
    assert not result.failed, result.failed_tasks
    assert started(result) == "warm", started(result)
    found = outputs(result)
    return f"{found['Report the probe']} {found['Render the role template']}"


def stored_payloads(launchers: warm.Launchers) -> dict[str, os.stat_result]:
    """Manifest name → stat of the stored payload, for the role's module."""
    found = {}
    for manifest in (launchers.directory / "reuse" / "payloads").glob("*.json"):
        if "reuse_probe" in json.loads(manifest.read_text())["name"]:
            found[manifest.name] = manifest.with_suffix(".payload").stat()
    return found


def rewrite(path: Path, old: str, new: str) -> None:
    """Edit ``path`` the way an editor does, with a modification time that differs."""
    before = path.stat().st_mtime_ns
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def test_an_unchanged_module_payload_is_built_once(
    launchers: warm.Launchers, run_warm: Run, roles: Path
) -> None:
    ready(launchers, run_warm, "reuse", roles_path=(roles,))
    assert probe(run_warm, roles) == "module-1 helper-1 note-1 42"
    first = stored_payloads(launchers)
    assert len(first) == 1, f"expected one stored payload of reuse_probe, found {first}"
    assert probe(run_warm, roles) == "module-1 helper-1 note-1 42"
    again = stored_payloads(launchers)
    assert {k: v.st_mtime_ns for k, v in again.items()} == {
        k: v.st_mtime_ns for k, v in first.items()
    }, "the payload was built and stored again although none of its files changed"
    for kind in ("program", "module"):
        kept = list((launchers.directory / "reuse" / f"{kind}-code").glob("*.code"))
        assert kept, f"expected compiled code kept by {kind} children, found none"


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(
            ("module_utils/reuse_helper.py", "helper-1", "helper-2", "module-1 helper-2 note-1 42"),
            id="module-util",
        ),
        pytest.param(
            ("library/reuse_probe.py", "module-1", "module-2", "module-2 helper-1 note-1 42"),
            id="module",
        ),
        pytest.param(
            ("templates/note.j2", "note-1", "note-2", "module-1 helper-1 note-2 42"),
            id="template",
        ),
    ],
)
def test_an_edited_file_is_what_the_next_run_runs(
    edit: tuple[str, str, str, str], launchers: warm.Launchers, run_warm: Run, roles: Path
) -> None:
    edited, old, new, expected = edit
    ready(launchers, run_warm, "reuse", roles_path=(roles,))
    assert probe(run_warm, roles) == "module-1 helper-1 note-1 42"
    rewrite(roles / "reuse" / edited, old, new)
    seen = probe(run_warm, roles)
    assert seen == expected, f"after editing {edited}: expected {expected!r}, the run saw {seen!r}"
