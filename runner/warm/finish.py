"""How a warm child ends: what interpreter shutdown does that anyone can see, without
tearing down the launcher's objects.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.zygote` when a child's run
ends. A child shares the launcher's memory copy-on-write. Normal interpreter
shutdown clears every module and releases every object, which writes to (and so
copies) nearly every page the launcher shares: about 80 ms of a warm one-task
reconcile, a quarter of it. :func:`exit_now` does instead, in shutdown's order,
what shutdown does that has an effect outside the process:

1. waits for the run's non-daemon threads (``threading._shutdown``);
2. runs the ``atexit`` callbacks (ansible-core's temp dir cleanup,
   ``weakref.finalize`` callbacks, ``logging.shutdown``, multiprocessing's);
3. flushes ``sys.stdout`` and ``sys.stderr``;
4. closes what releasing the run's own objects would have closed: every file
   object the run created and left open (outermost wrappers first, so buffered
   text reaches the file, and a ``gzip`` file gets its trailer), and every
   ``NamedTemporaryFile`` (which deletes it), but not the standard streams;
5. flushes the standard streams again, and C's stdio buffers;
6. ends the process with the status Python would have ended it with.

Objects the launcher made are never touched (``gc.freeze`` keeps them out of
``gc.get_objects``). Other ``__del__`` methods of a run's objects are not
called: the cleanup they would do (sockets, pipes, locks) is the operating
system's at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import os
import sys
import threading
from typing import Any

_io: Any = sys.modules["_io"]
#: In-memory files: closing them has no effect outside the process.
_MEMORY = (_io.BytesIO, _io.StringIO)


def exit_now(code: object) -> None:
    """End this child as ``raise SystemExit(code)`` would end the interpreter."""
    try:
        status = _status(code)
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
        _flush_standard_streams()
        _close_run_files()
        _flush_standard_streams()
    except BaseException:  # anything unexpected: shut down as Python does
        raise SystemExit(code) from None
    os._exit(status)


def _status(code: object) -> int:
    """The exit status of ``SystemExit(code)``; a message is printed as Python does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr)
    return 1


def _close_run_files() -> None:
    """Close, as their release would, the file objects this run created and left open:
    each before the file objects it wraps."""
    tempfile = sys.modules.get("tempfile")
    wrapper = getattr(tempfile, "_TemporaryFileWrapper", None) if tempfile else None
    kinds = (_io._IOBase,) if wrapper is None else (_io._IOBase, wrapper)
    # The run's own objects (the launcher's are frozen), one C-level test each.
    found = [obj for obj in gc.get_objects() if isinstance(obj, kinds)]
    standard = {id(layer) for layer in _standard_layers()}
    files = {
        id(obj): obj for obj in found if id(obj) not in standard and not isinstance(obj, _MEMORY)
    }
    for obj in _outermost_first(files):
        with contextlib.suppress(Exception):
            if not obj.closed:
                obj.close()


def _outermost_first(files: dict[int, Any]) -> list[Any]:
    """``files`` ordered so that an object comes before every file object it holds
    (directly, or through its instance dictionary)."""
    holds: dict[int, set[int]] = {}
    held_by = dict.fromkeys(files, 0)
    for key, obj in files.items():
        near = gc.get_referents(obj)
        near += [item for ref in near if isinstance(ref, dict) for item in ref.values()]
        holds[key] = {id(item) for item in near if id(item) in files and id(item) != key}
        for inner in holds[key]:
            held_by[inner] += 1
    ready = [key for key, count in held_by.items() if count == 0]
    ordered: list[Any] = []
    while ready:
        key = ready.pop()
        ordered.append(files[key])
        for inner in holds[key]:
            held_by[inner] -= 1
            if held_by[inner] == 0:
                ready.append(inner)
    placed = {id(obj) for obj in ordered}
    ordered += [obj for key, obj in files.items() if key not in placed]  # rings, if any
    return ordered


def _standard_streams() -> list[Any]:
    return [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__, sys.stdin, sys.__stdin__]


def _standard_layers() -> list[Any]:
    """The standard streams with the buffers and raw files under them."""
    layers = []
    for stream in _standard_streams():
        buffer = getattr(stream, "buffer", None)
        layers += [stream, buffer, getattr(buffer, "raw", None), getattr(stream, "raw", None)]
    return [layer for layer in layers if layer is not None]


def _flush_standard_streams() -> None:
    for stream in _standard_streams():
        with contextlib.suppress(Exception):
            if stream is not None and not stream.closed:
                stream.flush()
    with contextlib.suppress(Exception):
        _LIBC.fflush(None)  # what C code printed


_LIBC = ctypes.CDLL(None)
