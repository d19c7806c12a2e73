"""One runner directory per runner process: a second process on it gets its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.base import errors
from runner.config import rundir
from runner.config.settings import Settings

HOLD = """\
import sys
from collections.abc import Callable
from pathlib import Path
from runner.config import rundir
with rundir.claim_runner_dir(Path(sys.argv[1])) as used:
    print(used, flush=True)
    sys.stdin.read()  # hold it until the test closes our stdin
"""


def test_the_default_is_ansible_operators() -> None:
    assert Settings(watches_file=Path("w")).ansible.runner_dir == Path(
        "/tmp/ansible-operator/runner"
    )


def test_a_second_process_gets_its_own_directory(tmp_path: Path) -> None:
    wanted = tmp_path / "runner"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(wanted)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == str(wanted), "the first claim gets it"
        with rundir.claim_runner_dir(wanted) as used:
            assert used == tmp_path / f"runner-{os.getpid()}", f"the second claim got {used}"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    # The holder is gone, and the kernel dropped its lock with it.
    with rundir.claim_runner_dir(wanted) as used:
        assert used == wanted, f"after the holder ended, a claim got {used}"


def test_a_directory_that_cannot_be_made_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with (
        pytest.raises(errors.ConfigError, match="--runner-dir"),
        rundir.claim_runner_dir(blocker / "runner"),
    ):
        pass


# -- shared hosts: another local user must not be able to plant Ansible inputs ----------

NOBODY = 65534


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A world-writable, sticky directory, as /tmp is."""
    path = tmp_path / "shared"
    path.mkdir()
    path.chmod(0o1777)
    return path


def as_nobody(path: Path) -> None:
    """``path`` as if another user had made it (needs root; else it is skipped)."""
    if os.geteuid() != 0:
        pytest.skip("making a directory another user's needs root")
    os.chown(path, NOBODY, NOBODY)


def test_a_missing_runner_dir_is_created_private(shared: Path) -> None:
    wanted = shared / "ansible-operator" / "runner"
    with rundir.claim_runner_dir(wanted) as used:
        assert used == wanted
    modes = {p.name: oct(p.stat().st_mode & 0o7777) for p in (wanted.parent, wanted)}
    assert modes == {"ansible-operator": "0o700", "runner": "0o700"}, modes


def foreign_runner_dir(wanted: Path) -> None:
    wanted.mkdir(mode=0o700)
    as_nobody(wanted)


def loose_runner_dir(mode: int) -> Callable[[Path], None]:
    def plant(wanted: Path) -> None:
        wanted.mkdir()
        wanted.chmod(mode)

    return plant


def foreign_ancestor(wanted: Path) -> None:
    wanted.parent.chmod(0o777)
    as_nobody(wanted.parent)


def open_ancestor(wanted: Path) -> None:
    wanted.parent.chmod(0o777)


def symlinked_runner_dir(wanted: Path) -> None:
    elsewhere = wanted.with_name("elsewhere")
    elsewhere.mkdir(mode=0o700)
    wanted.symlink_to(elsewhere)


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        pytest.param(foreign_runner_dir, f"owned by uid {NOBODY}", id="runner-dir-of-another-user"),
        pytest.param(loose_runner_dir(0o755), "mode 0755", id="runner-dir-readable-by-others"),
        pytest.param(loose_runner_dir(0o777), "mode 0777", id="runner-dir-writable-by-all"),
        pytest.param(foreign_ancestor, f"owned by uid {NOBODY}", id="ancestor-of-another-user"),
        pytest.param(open_ancestor, "writable by other users", id="ancestor-writable-by-all"),
        pytest.param(symlinked_runner_dir, "symbolic link", id="runner-dir-a-symlink"),
    ],
)
def test_a_runner_dir_others_could_have_planted_is_refused(
    shared: Path, plant: Callable[[Path], None], problem: str
) -> None:
    wanted = shared / "ansible-operator" / "runner"
    wanted.parent.mkdir(mode=0o700)
    plant(wanted)
    with pytest.raises(errors.ConfigError) as raised, rundir.claim_runner_dir(wanted):
        pass
    message = str(raised.value)
    assert "--runner-dir" in message and problem in message, message
    lock = wanted / ".playbook-operator.lock"
    assert not lock.exists(), "nothing was written there"
