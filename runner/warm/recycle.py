"""Replacing a warm launcher between runs: when one is due, and the hand-over on its socket.

Part of :mod:`runner.warm`. A launcher imports once and then forks for years; what it
holds should not grow, but a leak in a pre-imported library, or memory an operator
must bound, is answered by replacing it: after a number of runs, or above an RSS cap
(:func:`due`, asked by :mod:`runner.warm.pool` as runs start).

The hand-over, with no run meeting a missing launcher or one going away: the pool
starts the replacement on the *same* socket path while the old launcher keeps
serving. When the replacement has imported everything it connects to the path (the
old launcher, :func:`connect`), takes the path over with an atomic rename, and sends
:data:`RETIRE` on that connection (:func:`retire`). The old launcher then serves what
was already queued on its socket, keeps accepting for :data:`GRACE` (a client that
looked the path up just before the rename still reaches it), ends once its runs
ended, and leaves the path alone. The pool sees the take-over as the socket's inode
changing (:func:`socket_inode`).

Imports only the standard library and :mod:`runner.warm.wire`.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.warm import wire

#: Why a launcher is replaced: it was handed its maximum of runs, or its RSS is above the
#: cap; or why it ended without a replacement: no run for the pool's ``idle_seconds``.
REASONS = ("runs", "rss", "idle")
#: How long a retired launcher keeps accepting after its successor took its path over.
GRACE = 0.5
#: The message a successor sends the launcher it replaces.
RETIRE: dict[str, Any] = {"retire": True}


@dataclass(frozen=True)
class Limits:
    """When a launcher is replaced; 0 turns a limit off."""

    max_runs: int = 0
    max_rss_bytes: int = 0


def due(limits: Limits, *, runs: int, pid: int) -> str | None:
    """Why the launcher ``pid``, handed ``runs`` runs, is to be replaced, or None."""
    if limits.max_runs and runs >= limits.max_runs:
        return "runs"
    if limits.max_rss_bytes and rss_bytes(pid) > limits.max_rss_bytes:
        return "rss"
    return None


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (``VmRSS``); 0 when it cannot be read."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024  # kB
    return 0


def socket_inode(path: Path) -> int | None:
    """The inode of the socket at ``path`` (which launcher serves it); None if none is."""
    try:
        return path.stat().st_ino
    except OSError:
        return None


def connect(path: str) -> socket.socket | None:
    """A connection to the launcher serving ``path``, if one does (the one to replace)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(5)
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


def retire(conn: socket.socket) -> None:
    """Tell the launcher at the other end of ``conn`` that its path was taken over."""
    with contextlib.suppress(OSError):
        wire.send(conn, RETIRE)
    conn.close()


def is_retire(request: Mapping[str, Any] | None) -> bool:
    """Whether a launcher received :data:`RETIRE` rather than a start request."""
    return request is not None and request.get("retire") is True
