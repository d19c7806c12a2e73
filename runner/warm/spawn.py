"""Starting a warm launcher process, reading what it reports once ready, and the
lifeline that ends every launcher with the runtime.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.pool` (and by
:mod:`runner.warm.succession` for replacements). A launcher is
``python -c`` :data:`_BOOTSTRAP`: it imports :mod:`runner.warm.zygote` from this
checkout or installation and calls ``zygote.main`` (the ``runner.warm import
zygote`` and ``zygote.main`` in its command line are how tools and tests find
launchers). It gets the read end of a lifeline pipe whose write end only the
runtime holds: however the runtime ends, the launchers see EOF and end too.

Before its socket exists, a launcher writes beside it which reuse mechanisms it
found no ground for on this ansible-core (:mod:`runner.warm.gates`); the first
time the pool sees the socket it reads that and logs each mechanism once.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.warm import gates

log = logging.getLogger("runner.warm")

_LIB_DIR = Path(__file__).resolve().parent.parent.parent
_BOOTSTRAP = (
    "import sys\n"
    "base = [p for p in sys.path if p]\n"
    "sys.path.append({lib!r})\n"
    "from runner.warm import zygote\n"
    "zygote.main(sys.argv[1:], base_path=base)\n"
)


@dataclass
class Launcher:
    """One launcher the pool keeps: where it serves, what it is started with, and its
    current process (a replacement's from its start on)."""

    name: str
    kind: str
    socket: Path
    env: dict[str, str]
    cwd: str
    proc: subprocess.Popen[bytes] | None = None
    starts: list[float] = field(default_factory=list)
    given_up: bool = False
    gates_read: bool = False  # what the launcher left off (gates.py) was read
    runs: int = 0  # runs handed to the current process
    replacing: int | None = None  # inode of the socket of the launcher being replaced
    #: Ended for idleness (the pool's ``idle_seconds``), until it serves again: the next
    #: run starts it and waits for it rather than starting cold.
    released: bool = False


class Spawner:
    """Starts launcher processes for one runtime and holds their lifeline."""

    def __init__(self, *, python: str, preload: Sequence[str], directory: Path) -> None:
        """``directory``: the pool's private directory (sockets, what runs reuse)."""
        self._python = python
        self._preload = tuple(preload)
        self._dir = directory
        self._lifeline_r, self._lifeline_w = os.pipe()
        self._reported_off: set[str] = set()  # mechanisms already logged as off

    def start(self, launcher: Launcher) -> subprocess.Popen[bytes] | None:
        """A new process for ``launcher`` (it serves once its socket is there), or None
        when none can be started (its runs start cold)."""
        argv = [self._python, "-c", _BOOTSTRAP.format(lib=str(_LIB_DIR))]
        argv += ["--kind", launcher.kind, "--socket", str(launcher.socket)]
        argv += ["--lifeline", str(self._lifeline_r)]
        argv += ["--cache", str(self._dir / "reuse")]
        for name in self._preload:
            argv += ["--preload", name]
        try:
            return subprocess.Popen(
                argv,
                env=launcher.env,
                cwd=launcher.cwd if os.path.isdir(launcher.cwd) else "/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(self._lifeline_r,),
                start_new_session=True,
            )
        except OSError as exc:
            log.warning(
                "cannot start a warm launcher; runs start cold",
                extra={"launcher": launcher.name, "error": str(exc)},
            )
            return None

    def report_off(self, launcher: Launcher) -> None:
        """One log line naming the reuse mechanisms a launcher found no ground for on
        this ansible-core (:mod:`runner.warm.gates`), once per mechanism: their runs
        compute that part themselves, as cold runs do."""
        path = launcher.socket.with_name(f"{launcher.socket.name}.gates")
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
            off = {str(k): str(v) for k, v in dict(found["off"]).items()}
        except (OSError, ValueError, KeyError, TypeError):
            return
        new = {k: v for k, v in off.items() if k not in self._reported_off}
        if not new:
            return
        self._reported_off.update(new)
        log.warning(
            "warm runs compute these themselves on this ansible-core, as cold runs do",
            extra={"ansible_core": str(found.get("ansible_core", "")), "off": gates.describe(new)},
        )

    def end(self, processes: Sequence[subprocess.Popen[bytes]], *, timeout: float) -> None:
        """Cut the lifeline (launchers exit on EOF, killing their children) and wait
        for ``processes`` to end, killing those still there after ``timeout``."""
        os.close(self._lifeline_w)
        deadline = time.monotonic() + timeout
        for proc in processes:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        os.close(self._lifeline_r)
