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

from runner.warm import gates, recycle, wire, zygote

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
    runs: int = 0  # runs handed to the current process
    replacing: int | None = None  # inode of the socket of the launcher being replaced


class Launchers:
    """Warm launchers for one runtime process; thread-safe."""

    def __init__(
        self,
        *,
        python: str = sys.executable,
        preload: Sequence[str] = (),
        max_runs: int = 0,
        max_rss_mib: int = 0,
    ) -> None:
        """``max_runs``, ``max_rss_mib``: replace a launcher after that many runs, or
        above that resident memory (0: never)."""
        self._python = python
        self._preload = tuple(preload)
        self._limits = recycle.Limits(max_runs=max_runs, max_rss_bytes=max_rss_mib * 2**20)
        self._retiring: list[subprocess.Popen[bytes]] = []  # replaced, ending their runs
        self._rss_warned = False
        self._dir = Path(tempfile.mkdtemp(prefix="playbook-operator-warm-"))
        self._lifeline_r, self._lifeline_w = os.pipe()
        self._lock = threading.Lock()
        self._programs: dict[str, _Process] = {}
        self._module: _Process | None = None
        self._closed = False
        self._over_cap: set[str] = set()
        self._reported_off: set[str] = set()  # mechanisms already logged as off
        self.outcomes: Counter[str] = Counter()  # warm / cold / lost runs
        self.recycles: Counter[str] = Counter(dict.fromkeys(recycle.REASONS, 0))

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
            if launcher is not None:
                launcher.runs += 1
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
            self._module.runs += 1
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
            return all(not self._replacing(p) for p in self._all_locked())

    def serving(self) -> dict[str, int]:
        """Launcher name → pid of its current process (a replacement from its start on)."""
        return {p.name: p.proc.pid for p in self._all() if p.proc is not None}

    def pids(self) -> list[int]:
        """Process ids of the live launchers, those being replaced included."""
        with self._lock:
            self._retiring = [p for p in self._retiring if p.poll() is None]
            retiring = [p.pid for p in self._retiring]
        live = [p.proc.pid for p in self._all() if p.proc is not None and p.proc.poll() is None]
        return live + retiring

    def running(self) -> int:
        return len(self.pids())

    def _all(self) -> list[_Process]:
        with self._lock:
            return self._all_locked()

    def _all_locked(self) -> list[_Process]:
        return [*self._programs.values(), *([self._module] if self._module else [])]

    def close(self, timeout: float = 5.0) -> None:
        """Stop every launcher (and so every run they started); remove the sockets."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        processes = [p.proc for p in self._all() if p.proc is not None]
        with self._lock:
            processes += self._retiring
        os.close(self._lifeline_w)  # launchers exit on EOF, killing their children
        deadline = time.monotonic() + timeout
        for proc in processes:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
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
            self._recycle_if_due(launcher)
            return launcher.socket
        now = time.monotonic()
        if proc is not None:
            log.warning(
                "warm launcher exited; starting it again",
                extra={"launcher": launcher.name, "exit_code": proc.returncode},
            )
            if not self._replacing(launcher):  # else the socket is its predecessor's, alive
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

    def _replacing(self, launcher: _Process) -> bool:
        """Whether ``launcher``'s process is a replacement that has not taken its socket
        path over yet (the path is still its predecessor's socket). Called locked."""
        inode = recycle.socket_inode(launcher.socket)
        if launcher.replacing is not None and inode != launcher.replacing:
            launcher.replacing = None
        return launcher.replacing is not None

    def _recycle_if_due(self, launcher: _Process) -> None:
        """Start a replacement for a live launcher that served its maximum of runs or is
        above the RSS cap; the old one keeps serving until the new one took over, and
        ends once its runs did (see the module doc). Called locked."""
        assert launcher.proc is not None
        self._retiring = [p for p in self._retiring if p.poll() is None]  # reaped when ended
        if self._closed or self._replacing(launcher):
            return  # one replacement at a time
        reason = recycle.due(self._limits, runs=launcher.runs, pid=launcher.proc.pid)
        inode = recycle.socket_inode(launcher.socket)
        if reason is None or inode is None:
            return  # nothing due, or the launcher does not serve yet
        if reason == "rss" and launcher.runs <= 1 and not self._rss_warned:
            self._rss_warned = True  # a fresh launcher is above it: replaced every run
            log.warning(
                "the warm launchers' RSS cap is below what a fresh launcher uses; "
                "they are replaced after every run",
                extra={"max_rss_mib": self._limits.max_rss_bytes // 2**20},
            )
        successor = self._spawn(launcher)
        if successor is None:
            return
        old = launcher.proc
        self._retiring.append(old)
        launcher.proc, launcher.runs, launcher.replacing = successor, 0, inode
        self.recycles[reason] += 1
        log.info(
            "warm launcher recycled: a replacement takes over, the old one ends after its runs",
            extra={
                "launcher": launcher.name,
                "reason": reason,
                "pid": old.pid,
                "replacement": successor.pid,
            },
        )

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
