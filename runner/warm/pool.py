"""The runtime's side of warm execution: starts, watches and stops the launchers.

Part of :mod:`runner.warm`. :class:`Launchers` keeps one program launcher per
distinct import-time environment of ``ansible-playbook`` (in practice one per
watch: the roles path differs) and one module launcher, each a
:mod:`runner.warm.zygote` process. It hands the Ansible stage two things:

* :meth:`Launchers.program_command` — the argv that starts ``ansible-playbook``
  through a launcher (the ``wire.py`` client in front of the real argv);
* :meth:`Launchers.module_interpreter` — the ``ansible_python_interpreter`` that
  starts modules through the module launcher.

Nothing here is ever required for a run to succeed: a launcher that is not
ready yet, has died or refuses a request means a cold start for that run, and
a dead launcher is started again (at most :data:`RESPAWNS` times a minute).
Launchers hold the read end of a lifeline pipe whose write end only this
process has; when the runtime dies, however it dies, they see EOF and kill
every run they started.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.warm import gates, wire, zygote

log = logging.getLogger("runner.warm")

WIRE = Path(wire.__file__).resolve()
#: The same client compiled (``client.c``, built by ``make venv`` and by the image): it
#: starts in about a millisecond instead of a Python interpreter's ten or more.
COMPILED_CLIENT = WIRE.with_name("wire-client")


def compiled_client() -> Path | None:
    """The compiled client when it was built and runs here, else None (then ``wire.py``)."""
    return COMPILED_CLIENT if os.access(COMPILED_CLIENT, os.X_OK) else None


_LIB_DIR = Path(__file__).resolve().parent.parent.parent
#: Program launchers kept at once; a run needing another one starts cold.
MAX_PROGRAM_LAUNCHERS = 4
#: Restarts of one launcher allowed per minute before it is given up for good.
RESPAWNS = 3
#: What the wire client writes to its status file.
WARM, COLD, LOST = "warm", "cold", "lost"

_BOOTSTRAP = (
    "import sys\n"
    "base = [p for p in sys.path if p]\n"
    "sys.path.append({lib!r})\n"
    "from runner.warm import zygote\n"
    "zygote.main(sys.argv[1:], base_path=base)\n"
)


@dataclass
class _Process:
    name: str
    kind: str
    socket: Path
    env: dict[str, str]
    cwd: str
    proc: subprocess.Popen[bytes] | None = None
    starts: list[float] = field(default_factory=list)
    given_up: bool = False
    gates_read: bool = False  # what the launcher left off (gates.py) was read


class Launchers:
    """Warm launchers for one runtime process; thread-safe."""

    def __init__(self, *, python: str = sys.executable, preload: Sequence[str] = ()) -> None:
        self._python = python
        self._preload = tuple(preload)
        self._dir = Path(tempfile.mkdtemp(prefix="playbook-operator-warm-"))
        self._lifeline_r, self._lifeline_w = os.pipe()
        self._lock = threading.Lock()
        self._programs: dict[str, _Process] = {}
        self._module: _Process | None = None
        self._closed = False
        self._over_cap: set[str] = set()
        self._reported_off: set[str] = set()  # mechanisms already logged as off
        self.outcomes: Counter[str] = Counter()  # warm / cold / lost runs

    @property
    def directory(self) -> Path:
        """Where the launchers' sockets and what runs reuse (:mod:`runner.warm.reuse`) live."""
        return self._dir

    # -- what the Ansible stage uses ------------------------------------------

    def program_command(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, status: Path
    ) -> list[str]:
        """``argv`` started through the program launcher for ``env``, reporting to ``status``."""
        key = hashlib.sha256(
            repr(sorted(zygote.comparable(env, kind="program").items())).encode()
        ).hexdigest()[:16]
        with self._lock:
            launcher = self._programs.get(key)
            if launcher is None and len(self._programs) >= MAX_PROGRAM_LAUNCHERS:
                if key not in self._over_cap:
                    self._over_cap.add(key)
                    log.warning(
                        "more distinct Ansible environments than warm launchers; "
                        "runs in this one start cold",
                        extra={"launchers": MAX_PROGRAM_LAUNCHERS},
                    )
            elif launcher is None:
                launcher = _Process(
                    name=f"program-{key}",
                    kind="program",
                    socket=self._dir / f"program-{key}.sock",
                    env=dict(env),
                    cwd=cwd,
                )
                self._programs[key] = launcher
            socket = self._ensure(launcher) if launcher is not None else self._dir / "none"
        compiled = compiled_client()
        client = [str(compiled)] if compiled else [self._python, "-I", "-S", str(WIRE)]
        return [*client, "--socket", str(socket), "--status", str(status), "--", *argv]

    def module_interpreter(self, *, env: Mapping[str, str], cwd: str) -> str:
        """An ``ansible_python_interpreter`` that runs modules through the module launcher:
        an executable script (Ansible quotes the interpreter as one word), which is the
        ``wire.py`` client for the launcher's socket."""
        with self._lock:
            if self._module is None:
                self._module = _Process(
                    name="module",
                    kind="module",
                    socket=self._dir / "module.sock",
                    env=dict(env),
                    cwd=cwd,
                )
            socket = self._ensure(self._module)
            script = self._dir / "python"
            if not script.exists():
                text = self._interpreter_script(socket)
                staging = script.with_suffix(".tmp")
                staging.write_text(text, encoding="utf-8")
                staging.chmod(0o755)
                staging.replace(script)
        return str(script)

    def _interpreter_script(self, socket: Path) -> str:
        """The module interpreter: the compiled client behind ``sh`` (a millisecond), or
        the Python client as a script."""
        arguments = ["--socket", str(socket), "--python", self._python]
        compiled = compiled_client()
        if compiled is not None:
            return f'#!/bin/sh\nexec {shlex.join([str(compiled), *arguments])} "$@"\n'
        return (
            f"#!{self._python} -IS\n"
            "import sys\n"
            f"sys.path.insert(0, {str(WIRE.parent)!r})\n"
            "import wire\n"
            f"wire.client([*{arguments!r}, *sys.argv[1:]])\n"
        )

    def outcome(self, status: Path) -> tuple[str, str]:
        """How a run started (``warm``, ``cold`` or ``lost``) and why, from its status file."""
        try:
            text = status.read_text(encoding="utf-8").strip()
        except OSError:
            text = "cold: no status from the launcher client"
        kind, _, reason = text.partition(": ")
        kind = kind if kind in (WARM, COLD, LOST) else COLD
        if kind == COLD:
            log.debug("ansible-playbook started cold", extra={"reason": reason})
        with self._lock:
            self.outcomes[kind] += 1
        return kind, reason

    def memory_bytes(self) -> int:
        """Resident memory of all live launchers (their shared pages counted once each)."""
        total = 0
        page = os.sysconf("SC_PAGE_SIZE")
        for launcher in self._all():
            if launcher.proc is None or launcher.proc.poll() is not None:
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                statm = Path(f"/proc/{launcher.proc.pid}/statm").read_text().split()
                total += int(statm[1]) * page
        return total

    def ready(self) -> bool:
        """Whether every launcher started so far accepts requests (its socket is there)."""
        processes = self._all()
        return bool(processes) and all(
            p.socket.exists() and p.proc is not None and p.proc.poll() is None for p in processes
        )

    def pids(self) -> list[int]:
        """Process ids of the live launchers."""
        return [p.proc.pid for p in self._all() if p.proc is not None and p.proc.poll() is None]

    def running(self) -> int:
        return len(self.pids())

    def _all(self) -> list[_Process]:
        with self._lock:
            return [*self._programs.values(), *([self._module] if self._module else [])]

    def close(self, timeout: float = 5.0) -> None:
        """Stop every launcher (and so every run they started); remove the sockets."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        processes = self._all()
        os.close(self._lifeline_w)  # launchers exit on EOF, killing their children
        deadline = time.monotonic() + timeout
        for launcher in processes:
            if launcher.proc is None:
                continue
            try:
                launcher.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                launcher.proc.kill()
                launcher.proc.wait()
        os.close(self._lifeline_r)
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- keeping launchers alive ------------------------------------------------

    def _ensure(self, launcher: _Process) -> Path:
        """The launcher's socket, (re)starting the launcher if needed. Called locked.
        A socket that does not exist yet simply means a cold start for the caller."""
        if self._closed or launcher.given_up:
            return launcher.socket
        proc = launcher.proc
        if proc is not None and proc.poll() is None:
            if not launcher.gates_read and launcher.socket.exists():
                launcher.gates_read = True
                self._report_off(launcher)
            return launcher.socket
        now = time.monotonic()
        if proc is not None:
            log.warning(
                "warm launcher exited; starting it again",
                extra={"launcher": launcher.name, "exit_code": proc.returncode},
            )
            with contextlib.suppress(FileNotFoundError):
                launcher.socket.unlink()
        launcher.starts = [t for t in launcher.starts if now - t < 60] + [now]
        if len(launcher.starts) > RESPAWNS + 1:
            launcher.given_up = True
            log.error(
                "warm launcher keeps exiting; its runs start cold from now on",
                extra={"launcher": launcher.name},
            )
            return launcher.socket
        launcher.proc = self._spawn(launcher)
        if launcher.proc is not None:
            log.info(
                "warm launcher started", extra={"launcher": launcher.name, "pid": launcher.proc.pid}
            )
        return launcher.socket

    def _report_off(self, launcher: _Process) -> None:
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

    def _spawn(self, launcher: _Process) -> subprocess.Popen[bytes] | None:
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
