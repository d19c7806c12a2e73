"""A warm launcher: a Python process that imported a program's libraries once and
forks one child per start request, which then becomes that program.

Part of :mod:`runner.warm`. Two kinds, one per ``--kind``:

* ``program`` — ``ansible-playbook``. ansible-core's controller side is imported
  once; each child resets what ansible-core computed at import from the
  environment (its constants, a fresh local temp dir) and runs the
  ``ansible-playbook`` script as ``__main__``.
* ``module`` — the interpreter of Ansible modules. The ``kubernetes`` client,
  urllib3, PyYAML and ansible's ``module_utils`` are imported once; each child
  runs one AnsiballZ payload as ``__main__``. Collection code is never
  pre-imported: the payload brings its own.

A child is the program that would have been exec'd: the client's argv,
environment, working directory, umask and stdin/stdout/stderr, no other file
descriptor, default signal handlers, its own session, and it dies with the
launcher (``PR_SET_PDEATHSIG``). When its client goes away (a timeout killed
it), the child's whole process tree is killed (:mod:`runner.warm.tree`).
What a child does never reaches the launcher or a later child: every run is a
fresh fork of the same, untouched state. A child that is done ends without
tearing the launcher's objects down, doing only what shutdown does that can be
seen from outside (:mod:`runner.warm.finish`). What the child does after the
fork is :mod:`runner.warm.child`'s; this module prepares the launcher and
serves its socket.

A launcher serves only requests whose import-time inputs match its own — the
environment apart from per-run variables, and the ansible.cfg that the
request's working directory would select (:mod:`runner.warm.sameness`);
anything else is answered ``cold`` and the client execs the program itself. It
exits, killing every process tree it started, when the runtime that started it
goes away (its lifeline pipe reaches EOF).

A launcher started on a path another one serves replaces it (recycling,
:mod:`runner.warm.recycle`): it takes the path over once ready and tells the old
one to retire, which ends once its runs did.

Run as ``python -c`` by :mod:`runner.warm.spawn` (its command line names
``runner.warm import zygote`` and ``zygote.main``).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.warm import (
    child,
    finish,
    gates,
    payload,
    recycle,
    reuse,
    sameness,
    shortcut,
    tree,
    wire,
)

PRELOAD: dict[str, tuple[str, ...]] = {
    "program": (
        "ansible.cli.playbook",
        "ansible.executor.playbook_executor",
        "ansible.executor.task_queue_manager",
        "ansible.executor.process.worker",
        "ansible.playbook.handler_task_include",
        "ansible.module_utils._text",
        "multiprocessing.popen_fork",
        "ansible.executor.task_executor",
        "ansible.executor.module_common",
        "ansible.inventory.manager",
        "ansible.vars.manager",
        "ansible.template",
        "ansible.playbook",
        "ansible.playbook.role",
        "ansible.plugins.loader",
        "ansible.plugins.action",
        "ansible.plugins.action.normal",
        "ansible.plugins.action.command",
        "ansible.plugins.action.debug",
        "ansible.plugins.action.set_fact",
        "ansible.plugins.callback",
        "ansible.plugins.callback.default",
        "ansible.plugins.connection.local",
        "ansible.plugins.shell.sh",
        "ansible.plugins.strategy.linear",
        "ansible.plugins.inventory.ini",
        "ansible.plugins.inventory.yaml",
        "ansible.plugins.inventory.host_list",
        "ansible.plugins.filter.core",
        "ansible.plugins.filter.mathstuff",
        "ansible.plugins.filter.urlsplit",
        "ansible.plugins.test.core",
        "ansible.plugins.test.files",
        "ansible.plugins.test.mathstuff",
        "ansible.plugins.test.uri",
        "ansible.plugins.lookup",
        "ansible.plugins.vars.host_group_vars",
        "ansible.plugins.cache.jsonfile",
        "ansible.plugins.cache.memory",
        "ansible.parsing.vault",
        "ansible.module_utils.basic",
        "jinja2",
        "yaml",
        "multiprocessing.queues",
        "multiprocessing.synchronize",
    ),
    "module": (
        "ansible.module_utils.basic",
        "ansible.module_utils.common.dict_transformations",
        "ansible.module_utils.common.text.converters",
        "ansible.module_utils.six",
        "ansible.module_utils.urls",
        "ansible.module_utils._internal._ansiballz._loader",
        "kubernetes",
        "kubernetes.client",
        "kubernetes.config",
        "kubernetes.dynamic",
        "kubernetes.dynamic.exceptions",
        "kubernetes.stream",
        "urllib3",
        "yaml",
        "requests",
        "zipfile",
        "tempfile",
        "shutil",
        "base64",
    ),
}


@dataclass
class _Job:
    pid: int
    conn: socket.socket


@dataclass
class _Launcher:
    kind: str
    socket_path: str
    lifeline: int
    baseline: sameness.Baseline  # what a request must match to start warm
    setup: child.Setup  # what every child is handed
    jobs: dict[int, _Job] = field(default_factory=dict)  # by child pid
    by_conn: dict[int, _Job] = field(default_factory=dict)  # by client fd
    retired: float | None = None  # when a successor took the socket path over


# -- preparing -------------------------------------------------------------------


def preload(kind: str, extra: Iterable[str] = ()) -> list[str]:
    """Import what children of ``kind`` need; the names that failed (best effort)."""
    failed: list[str] = []
    for name in (*PRELOAD[kind], *extra):
        try:
            importlib.import_module(name)
        except Exception:  # a missing optional library only costs warmth
            failed.append(name)
    return failed


# -- serving ---------------------------------------------------------------------


def serve(launcher: _Launcher) -> dict[str, Any] | None:
    """Serve until the lifeline breaks (returns None, in the launcher) or until this
    process is a freshly forked child (returns the request it must carry out)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = f"{launcher.socket_path}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(staging)
    listener.bind(staging)
    os.chmod(staging, 0o600)
    listener.listen(64)
    predecessor = recycle.connect(launcher.socket_path)  # a launcher this one replaces
    os.replace(staging, launcher.socket_path)  # ready only once everything is imported
    if predecessor is not None:
        recycle.retire(predecessor)

    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(launcher.lifeline, selectors.EVENT_READ, "lifeline")
    selector.register(wakeup_r, selectors.EVENT_READ, "wakeup")
    parent = os.getpid()
    orphaned = False  # the runtime went away: its private directory goes with it
    try:
        while True:
            timeout = None
            if launcher.retired is not None:
                left = launcher.retired + recycle.GRACE - time.monotonic()
                if left <= 0 and not launcher.jobs:
                    return None  # retired and drained: the successor serves the path
                timeout = left if left > 0 else None  # then each ended run wakes it
            for key, _ in selector.select(timeout):
                tag = key.data
                if tag == "lifeline":
                    orphaned = True
                    return None
                if tag == "wakeup":
                    with contextlib.suppress(BlockingIOError):
                        os.read(wakeup_r, 4096)
                    _reap(launcher, selector)
                elif tag == "accept":
                    conn, _ = listener.accept()
                    forked = _start(launcher, conn, selector)
                    if forked is not None:
                        # In the child. Close the launcher's descriptors through the
                        # objects that own them: an object merely forgotten would close
                        # its number whenever the garbage collector frees it — by then
                        # the number of a socket the program opened.
                        request, fds = forked
                        for job in launcher.jobs.values():
                            job.conn.close()
                        launcher.jobs.clear()
                        launcher.by_conn.clear()
                        for owner in (conn, listener, selector):
                            owner.close()
                        for fd in (wakeup_r, wakeup_w):
                            os.close(fd)
                        child.become(request, fds, launcher_pid=_launcher_pid(launcher))
                        return request
                else:
                    _from_client(launcher, key.fileobj, selector)  # type: ignore[arg-type]
    finally:
        if os.getpid() == parent:
            tree.kill_children()  # every run, and every orphan a run left behind
            if launcher.retired is None:  # else the path is the successor's socket
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(launcher.socket_path)
            if orphaned:  # also after kill -9 of the runtime, which cannot remove it
                shutil.rmtree(os.path.dirname(launcher.socket_path), ignore_errors=True)


def _start(
    launcher: _Launcher, conn: socket.socket, selector: selectors.BaseSelector
) -> tuple[dict[str, Any], list[int]] | None:
    """Serve one connection: None in the launcher; in a forked child, the request and
    the client's descriptors (stdin, stdout, stderr) it must take over."""
    conn.settimeout(10)  # a client sends its request right after connecting
    try:
        request, fds = wire.receive(conn)
    except (OSError, ValueError, wire.ProtocolError):
        conn.close()
        return None
    if recycle.is_retire(request):
        launcher.retired = time.monotonic()
        for fd in fds:
            os.close(fd)
        conn.close()
        return None
    try:
        reason = "no request" if request is None else launcher.baseline.refusal(request)
        if reason is None and len(fds) != 3:
            reason = f"expected stdin, stdout and stderr, got {len(fds)} descriptors"
        if reason is not None:
            with contextlib.suppress(OSError):
                wire.send(conn, {"cold": reason})
            conn.close()
            return None
        assert request is not None
        pid = os.fork()
        if pid == 0:
            return request, fds
        with contextlib.suppress(OSError):
            wire.send(conn, {"pid": pid})
    finally:
        if os.getpid() == _launcher_pid(launcher):
            for fd in fds:
                os.close(fd)
    job = _Job(pid=pid, conn=conn)
    launcher.jobs[pid] = job
    launcher.by_conn[conn.fileno()] = job
    conn.setblocking(True)
    selector.register(conn, selectors.EVENT_READ, "client")
    return None


def _launcher_pid(launcher: _Launcher) -> int:
    return launcher.__dict__.setdefault("pid", os.getpid())  # type: ignore[no-any-return]


def _from_client(
    launcher: _Launcher, conn: socket.socket, selector: selectors.BaseSelector
) -> None:
    """A relayed signal, or the client went away: then the child's session is killed."""
    job = launcher.by_conn.get(conn.fileno())
    try:
        message, fds = wire.receive(conn)
        for fd in fds:
            os.close(fd)
    except (OSError, ValueError, wire.ProtocolError):
        message = None
    if job is None:
        return
    if message is not None and "signal" in message:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(job.pid, int(message["signal"]))
        return
    tree.kill_tree(job.pid)
    selector.unregister(conn)
    launcher.by_conn.pop(conn.fileno(), None)
    conn.close()


def _reap(launcher: _Launcher, selector: selectors.BaseSelector) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        job = launcher.jobs.pop(pid, None)
        if job is None:
            continue
        if os.WIFSIGNALED(status):
            answer = {"signal": os.WTERMSIG(status)}
        else:
            answer = {"exit": os.waitstatus_to_exitcode(status)}
        if job.conn.fileno() in launcher.by_conn:
            launcher.by_conn.pop(job.conn.fileno())
            with contextlib.suppress(OSError):
                wire.send(job.conn, answer)
            selector.unregister(job.conn)
            job.conn.close()


def _report(socket_path: str, off: dict[str, str]) -> None:
    """Tell the runtime what is off and why, beside the socket (:mod:`runner.warm.pool`
    logs it once); written before the socket exists."""
    version = getattr(sys.modules.get("ansible.release"), "__version__", "")
    staging = f"{socket_path}.gates.{os.getpid()}"
    with contextlib.suppress(OSError):
        Path(staging).write_text(
            json.dumps({"ansible_core": version, "off": off}), encoding="utf-8"
        )
        os.replace(staging, f"{socket_path}.gates")


def main(argv: list[str], *, base_path: list[str]) -> None:
    """``--kind K --socket S --lifeline FD [--cache DIR] [--preload NAME]...``;
    ``base_path``: sys.path as ``python script`` would have it, minus the script's own
    directory."""
    options: dict[str, list[str]] = {"--kind": [], "--socket": [], "--lifeline": []}
    options["--preload"] = []
    options["--cache"] = []  # where runs keep what later runs reuse
    rest = list(argv)
    while rest:
        name = rest.pop(0)
        if name not in options or not rest:
            sys.exit(f"warm launcher: unexpected argument {name!r}")
        options[name].append(rest.pop(0))
    kind = options["--kind"][0]
    preload(kind, options["--preload"])  # what is missing is only imported by each child
    off = gates.check(kind)
    _report(options["--socket"][0], off)
    routing, plugins = reuse.RoutingMetadata(), reuse.PluginOptions()
    if kind == "program":
        if gates.ROUTING not in off:
            routing.prepare()
        if gates.PLUGIN_OPTIONS not in off:
            plugins.prepare()
        if gates.STACK_WALK not in off:
            shortcut.prepare()
    # Children share the launcher's pages copy-on-write; a garbage collection in a
    # child would touch (and so copy) every object. Frozen objects are never scanned.
    gc.collect()
    gc.freeze()
    cwd = os.getcwd()
    setup = child.Setup(
        kind=kind,
        base_path=base_path,
        sources=payload.ansible_sources() if kind == "module" else {},
        routing=routing,
        plugins=plugins,
        payloads=(
            reuse.PayloadCache(Path(options["--cache"][0]) / "payloads")
            if kind == "program" and options["--cache"]
            else None
        ),
        compiled=(
            reuse.CompiledCode(Path(options["--cache"][0]) / f"{kind}-code")
            if options["--cache"]
            else None
        ),
        off=off,
    )
    launcher = _Launcher(
        kind=kind,
        socket_path=options["--socket"][0],
        lifeline=int(options["--lifeline"][0]),
        baseline=sameness.Baseline.own(kind, environ=os.environ, cwd=cwd),
        setup=setup,
    )
    _launcher_pid(launcher)
    tree.become_subreaper()
    sys.stdout.flush()
    sys.stderr.flush()
    request = serve(launcher)
    if request is None:
        return
    try:
        child.run(launcher.setup, request)
    except SystemExit as exc:
        finish.exit_now(exc.code)
    finish.exit_now(None)
