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

Recycling: a launcher that was handed ``max_runs`` runs, or whose resident memory
is above ``max_rss_mib``, is replaced between runs (:mod:`runner.warm.recycle`):
the replacement starts while the old one serves, takes over when ready, and the
old one ends when its runs did.

Idle release: once the pool had no run in flight and none started for
``idle_seconds``, every launcher ends the way a replaced one does, without a
replacement, to give its memory back (:class:`runner.warm.succession.IdleRelease`).
The next run starts them again and waits for them, at most
:data:`runner.warm.succession.RESTART_WAIT`, rather than starting cold.

What :class:`Launchers` itself keeps is the bookkeeping: which launchers there
are, what runs are handed, how runs started, and restarting a launcher that
exited. Starting a process and its lifeline are :mod:`runner.warm.spawn`'s job,
replacing one between runs :mod:`runner.warm.succession`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.warm import recycle, sameness, spawn, succession, wire

log = logging.getLogger("runner.warm")

WIRE = Path(wire.__file__).resolve()
#: The same client compiled (``client.c``, built by ``make venv`` and by the image): it
#: starts in about a millisecond instead of a Python interpreter's ten or more.
COMPILED_CLIENT = WIRE.with_name("wire-client")


def compiled_client() -> Path | None:
    """The compiled client when it was built and runs here, else None (then ``wire.py``)."""
    return COMPILED_CLIENT if os.access(COMPILED_CLIENT, os.X_OK) else None


#: Program launchers kept at once; a run needing another one starts cold.
MAX_PROGRAM_LAUNCHERS = 4
#: Restarts of one launcher allowed per minute before it is given up for good.
RESPAWNS = 3
#: What the wire client writes to its status file.
WARM, COLD, LOST = "warm", "cold", "lost"


class Launchers:
    """Warm launchers for one runtime process; thread-safe."""

    def __init__(
        self,
        *,
        python: str = sys.executable,
        preload: Sequence[str] = (),
        max_runs: int = 0,
        max_rss_mib: int = 0,
        idle_seconds: float = 0,
    ) -> None:
        """``max_runs``, ``max_rss_mib``: replace a launcher after that many runs, or
        above that resident memory (0: never). ``idle_seconds``: end every launcher once
        the pool had no run in flight and none started for that long (0: never)."""
        self._python = python
        self._dir = Path(tempfile.mkdtemp(prefix="playbook-operator-warm-"))
        self._spawner = spawn.Spawner(python=python, preload=preload, directory=self._dir)
        self._succession = succession.Succession(
            limits=recycle.Limits(max_runs=max_runs, max_rss_bytes=max_rss_mib * 2**20),
            spawner=self._spawner,
        )
        self._lock = threading.Lock()
        self._programs: dict[str, spawn.Launcher] = {}
        self._module: spawn.Launcher | None = None
        self._closed = False
        self._over_cap: set[str] = set()
        self.outcomes: Counter[str] = Counter()  # warm / cold / lost runs
        self.recycles: Counter[str] = self._succession.recycles  # by reason
        self._idle = succession.IdleRelease(
            seconds=idle_seconds,
            lock=self._lock,
            launchers=self._all_locked,
            succession=self._succession,
        )

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
            repr(sorted(sameness.comparable(env, kind="program").items())).encode()
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
                launcher = spawn.Launcher(
                    name=f"program-{key}",
                    kind="program",
                    socket=self._dir / f"program-{key}.sock",
                    env=dict(env),
                    cwd=cwd,
                )
                self._programs[key] = launcher
            if launcher is not None:
                launcher.runs += 1
            socket = self._ensure(launcher) if launcher is not None else self._dir / "none"
            self._idle.started(str(status))
            restarted = [p for p in (launcher, self._module) if p is not None and p.released]
        if restarted:
            self._idle.await_restart(restarted)
        compiled = compiled_client()
        client = [str(compiled)] if compiled else [self._python, "-I", "-S", str(WIRE)]
        return [*client, "--socket", str(socket), "--status", str(status), "--", *argv]

    def module_interpreter(self, *, env: Mapping[str, str], cwd: str) -> str:
        """An ``ansible_python_interpreter`` that runs modules through the module launcher:
        an executable script (Ansible quotes the interpreter as one word), which is the
        ``wire.py`` client for the launcher's socket."""
        with self._lock:
            if self._module is None:
                self._module = spawn.Launcher(
                    name="module",
                    kind="module",
                    socket=self._dir / "module.sock",
                    env=dict(env),
                    cwd=cwd,
                )
            self._module.runs += 1
            socket = self._ensure(self._module)
            self._idle.started()
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

    def abandoned(self, status: Path) -> None:
        """A run of ``program_command`` whose outcome will never be read (the run raised
        before it ended): it is no longer in flight, so the pool can be released idle."""
        with self._lock:
            self._idle.ended(str(status))

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
            self._idle.ended(str(status))
        return kind, reason

    def memory_bytes(self) -> int:
        """Resident memory of all live launchers (their shared pages counted once each)."""
        total = 0
        page = os.sysconf("SC_PAGE_SIZE")
        for pid in self.pids():
            with contextlib.suppress(OSError, ValueError, IndexError):
                statm = Path(f"/proc/{pid}/statm").read_text().split()
                total += int(statm[1]) * page
        return total

    def ready(self) -> bool:
        """Whether every launcher started so far accepts requests (its socket is there)."""
        processes = self._all()
        return bool(processes) and all(
            p.socket.exists() and p.proc is not None and p.proc.poll() is None for p in processes
        )

    def settled(self) -> bool:
        """Whether no replacement launcher is still on its way to serving (recycling)."""
        with self._lock:
            return all(not self._succession.replacing(p) for p in self._all_locked())

    def serving(self) -> dict[str, int]:
        """Launcher name → pid of its current process (a replacement from its start on)."""
        return {p.name: p.proc.pid for p in self._all() if p.proc is not None}

    def pids(self) -> list[int]:
        """Process ids of the live launchers, those being replaced included."""
        with self._lock:
            retiring = [p.pid for p in self._succession.retiring()]
        live = [p.proc.pid for p in self._all() if p.proc is not None and p.proc.poll() is None]
        return live + retiring

    def running(self) -> int:
        return len(self.pids())

    def _all(self) -> list[spawn.Launcher]:
        with self._lock:
            return self._all_locked()

    def _all_locked(self) -> list[spawn.Launcher]:
        return [*self._programs.values(), *([self._module] if self._module else [])]

    def close(self, timeout: float = 5.0) -> None:
        """Stop every launcher (and so every run they started); remove the sockets."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._idle.close(timeout)
        processes = [p.proc for p in self._all() if p.proc is not None]
        with self._lock:
            processes += self._succession.retiring()
        self._spawner.end(processes, timeout=timeout)  # launchers kill their children
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- keeping launchers alive ------------------------------------------------

    def _ensure(self, launcher: spawn.Launcher) -> Path:
        """The launcher's socket, (re)starting the launcher if needed. Called locked.
        A socket that does not exist yet simply means a cold start for the caller."""
        if self._closed or launcher.given_up:
            return launcher.socket
        proc = launcher.proc
        if proc is not None and proc.poll() is None:
            if launcher.socket.exists():
                launcher.released = False  # serving again
                if not launcher.gates_read:
                    launcher.gates_read = True
                    self._spawner.report_off(launcher)
            self._succession.recycle_if_due(launcher)
            return launcher.socket
        now = time.monotonic()
        if proc is not None:
            log.warning(
                "warm launcher exited; starting it again",
                extra={"launcher": launcher.name, "exit_code": proc.returncode},
            )
            launcher.released = False  # its runs start cold while it starts, as documented
            # A replacement's socket path is still its predecessor's, alive: keep it.
            if not self._succession.replacing(launcher):
                with contextlib.suppress(FileNotFoundError):
                    launcher.socket.unlink()
        if not launcher.released:  # ending for idleness is not exiting: not counted
            launcher.starts = [t for t in launcher.starts if now - t < 60] + [now]
        if len(launcher.starts) > RESPAWNS + 1:
            launcher.given_up = True
            log.error(
                "warm launcher keeps exiting; its runs start cold from now on",
                extra={"launcher": launcher.name},
            )
            return launcher.socket
        launcher.proc = self._spawner.start(launcher)
        if launcher.proc is None:
            launcher.released = False  # nothing to wait for
        else:
            log.info(
                "warm launcher started", extra={"launcher": launcher.name, "pid": launcher.proc.pid}
            )
        return launcher.socket
