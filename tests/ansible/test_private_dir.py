"""The private data dir holds only what the runtime writes: ansible-runner inputs found
there (planted by someone else, or left by another tool) are removed before each run,
and the runtime's own files are written without following a planted symbolic link."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ansible.conftest import RunPlaybook

BAD_FLAG = "--no-such-option-planted"
#: ansible-runner inputs someone else may have left, each of which would break the run.
PLANTED_FILES = {
    "args": BAD_FLAG,
    "env/cmdline": BAD_FLAG,
    "env/envvars": "ANSIBLE_STDOUT_CALLBACK: no_such_callback\n",
    "env/settings": "fact_cache_type: nonsense\n",
    "project/ansible.cfg": "[defaults]\nstdout_callback = no_such_callback\n",
    "inventory/planted": "[all:vars]\nansible_connection=no_such_connection\n",
}
#: Links where the runtime writes its own inputs: a write must not go through them.
PLANTED_LINKS = ("env/extravars", "inventory/hosts", "project")


@pytest.mark.parametrize("kind", [pytest.param("files"), pytest.param("links")])
def test_planted_inputs_are_removed_before_the_run(
    run_playbook: RunPlaybook, tmp_path: Path, kind: str
) -> None:
    pdd = tmp_path / "pdd"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("untouched")
    planted = list(PLANTED_FILES) if kind == "files" else list(PLANTED_LINKS)
    for relative in planted:
        (pdd / relative).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if kind == "files":
            (pdd / relative).write_text(PLANTED_FILES[relative])
        else:
            (pdd / relative).symlink_to(outside if relative == "project" else outside / "keep")

    result = run_playbook("debug", private_data_dir=pdd)

    assert (result.ok, result.failed) == (1, False), (result.failed_tasks, result.output_tail)
    left = [
        r for r in planted if (pdd / r).is_symlink() or (kind == "files" and (pdd / r).exists())
    ]
    assert left == [], f"planted {kind} still in the private data dir: {left}"
    assert (outside / "keep").read_text() == "untouched", "a write followed a planted link"
    assert sorted(p.name for p in outside.iterdir()) == ["keep"], "nothing written outside"
