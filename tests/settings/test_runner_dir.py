"""One runner directory per runner process: a second process on it gets its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner import errors, settings

HOLD = """\
import sys
from pathlib import Path
from runner import settings
with settings.claim_runner_dir(Path(sys.argv[1])) as used:
    print(used, flush=True)
    sys.stdin.read()  # hold it until the test closes our stdin
"""


def test_the_default_is_ansible_operators() -> None:
    assert settings.Settings(watches_file=Path("w")).runner_dir == Path(
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
        with settings.claim_runner_dir(wanted) as used:
            assert used == tmp_path / f"runner-{os.getpid()}", f"the second claim got {used}"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    # The holder is gone, and the kernel dropped its lock with it.
    with settings.claim_runner_dir(wanted) as used:
        assert used == wanted, f"after the holder ended, a claim got {used}"


def test_a_directory_that_cannot_be_made_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with (
        pytest.raises(errors.ConfigError, match="--runner-dir"),
        settings.claim_runner_dir(blocker / "runner"),
    ):
        pass
