"""A launcher's child: taking the client's process context, then running the program.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.zygote` right after it
forked for a start request. :func:`become` gives the child the client's process
context and nothing of the launcher's: the client's standard streams and no
other descriptor, its environment, umask and working directory; default signal
handlers, a session of its own, death with the launcher. :func:`run` then carries the
request out as ``__main__``: ``ansible-playbook`` with ansible-core's constants
recomputed from the child's environment, or one AnsiballZ payload
(:mod:`runner.warm.payload`) — each first handed, per :mod:`runner.warm.gates`,
what earlier runs computed (:mod:`runner.warm.reuse`), the cheaper
equivalents of hot internals (:mod:`runner.warm.shortcut`) and a controller that
waits for its workers instead of polling them (:mod:`runner.warm.arrivals`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import runpy
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.warm import arrivals, gates, payload, reuse, shortcut, tree


@dataclass
class Setup:
    """What a launcher prepared once for all its children."""

    kind: str
    base_path: list[str]  # sys.path as ``python script`` would have it, minus the script's
    sources: dict[str, int] = field(default_factory=dict)  # module kind: see payload.py
    routing: reuse.RoutingMetadata = field(default_factory=reuse.RoutingMetadata)
    plugins: reuse.PluginOptions = field(default_factory=reuse.PluginOptions)
    payloads: reuse.PayloadCache | None = None  # program kind: see reuse.py
    compiled: reuse.CompiledCode | None = None  # see reuse.py
    off: dict[str, str] = field(default_factory=dict)  # mechanism -> why (gates.py)


def become(request: Mapping[str, Any], fds: list[int], *, launcher_pid: int) -> None:
    """In the forked child: take the client's process context and nothing else."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setsid()
    tree.die_with_parent()
    if os.getppid() != launcher_pid:
        os._exit(1)  # the launcher died while forking
    for target, fd in enumerate(fds):
        os.dup2(fd, target, inheritable=True)
    keep = {0, 1, 2}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request.get("umask", 0o022)))
    try:
        os.chdir(request.get("cwd") or "/")
    except OSError as exc:
        _die(f"cannot enter {request.get('cwd')!r}: {exc}")
    time.tzset()  # a TZ of the request's, if any


def run(setup: Setup, request: Mapping[str, Any]) -> None:
    """Carry out ``request`` as ``__main__``; SystemExit ends the process as usual."""
    argv = [str(a) for a in request["argv"]]
    if setup.kind == "program":
        _reuse_code(setup)  # first: refreshing the constants renders templates
        _refresh_ansible()
        _reuse(setup)
        script = argv[0]
        sys.argv = argv
        sys.path[:] = [os.path.dirname(os.path.realpath(script)), *setup.base_path]
        runpy.run_path(script, run_name="__main__")
        return
    python = str(argv[0])
    _reuse_code(setup)
    _reuse(setup)
    payload.run(python=python, args=argv[1:], base_path=setup.base_path, sources=setup.sources)


def _refresh_ansible() -> None:
    """Recompute what ansible-core derived from the environment at import: its constants
    (a fresh DEFAULT_LOCAL_TMP for this process, per-run settings such as the fact cache)."""
    constants = importlib.import_module("ansible.constants")
    for setting in constants.config.get_configuration_definitions():
        value = constants.config.get_config_value(setting, variables=vars(constants))
        setattr(constants, setting, value)


def _reuse(setup: Setup) -> None:
    """Hand the run what earlier runs computed (:mod:`runner.warm.reuse`) and the cheaper
    equivalents of hot ansible-core internals (:mod:`runner.warm.shortcut`)."""
    on = _on(setup)
    if setup.kind == "program" and on(gates.STACK_WALK):
        _saving(shortcut.install)
    if setup.kind == "program" and on(gates.RESULTS_WAIT):
        _saving(arrivals.install)
    if on(gates.ROUTING):
        _saving(setup.routing.install)
    if on(gates.PLUGIN_OPTIONS):
        _saving(setup.plugins.install)
    if setup.payloads is not None and on(gates.PAYLOADS):
        _saving(setup.payloads.install)


def _reuse_code(setup: Setup) -> None:
    """Compile through the code earlier runs compiled: templates in ``ansible-playbook``,
    the payload's files in modules."""
    if setup.compiled is None:
        return
    on = _on(setup)
    if setup.kind == "program" and on(gates.TEMPLATES):
        _saving(setup.compiled.install_for_templates)
    elif setup.kind == "module" and on(gates.MODULE_CODE):
        _saving(setup.compiled.install_for_modules)


def _on(setup: Setup) -> Callable[[str], bool]:
    """Whether a mechanism's ground holds for this launcher (:mod:`runner.warm.gates`)."""
    return lambda mechanism: mechanism not in setup.off


def _saving(install: Callable[[], object]) -> None:
    """Install one saving. A failure only costs that saving: the run computes it
    itself, as cold."""
    try:
        install()
    except Exception as exc:  # ansible-core internals differ from what reuse expects
        with contextlib.suppress(OSError):
            os.write(2, f"warm launcher: not reusing earlier runs' work: {exc!r}\n".encode())


def _die(message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"warm launcher: {message}\n".encode())
    os._exit(127)
