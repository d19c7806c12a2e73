"""A run's output, read live: the child's stdout and stderr on one pipe, fed to
ansible-runner's event filter by a thread of its own.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status), used
by :mod:`runner.ansible.launch` for each run. ansible-runner's subprocess mode
reads the child's output only when it ends; reading the pipe ourselves keeps job
events (and task logs) live. The pipe stands where pexpect's pty would: stdout
and stderr together, stdin from ``/dev/null``. Knows nothing of ansible-runner's
API: the sink is handed in (anything with ``write`` and ``close``).
"""

from __future__ import annotations

import codecs
import os
import select
import threading
from typing import Any

from runner.ansible.events import Logger


class Output:
    """The pipe of one run's output and the thread that reads it."""

    def __init__(self, sink: Any, *, name: str, grace: float) -> None:
        """``sink``: what the output is written to (closed by the reader); ``grace``:
        how long to wait for the end of the output after the run, twice over."""
        self._sink = sink
        self._grace = grace
        self._read_fd, self._write_fd = os.pipe()
        self._devnull = os.open(os.devnull, os.O_RDONLY)
        self._stop = threading.Event()
        self._reader = threading.Thread(
            target=_pump,
            args=(self._read_fd, sink, self._stop),
            name=name,
            daemon=True,
        )

    def descriptors(self) -> tuple[int, int, int]:
        """The child's stdin, stdout and stderr."""
        return self._devnull, self._write_fd, self._write_fd

    def start(self) -> None:
        self._reader.start()

    def finish(self, *, log: Logger) -> None:
        """After the run: close our ends and read what remains."""
        os.close(self._write_fd)
        os.close(self._devnull)
        # EOF comes once every holder of the pipe is gone. A process a task left
        # behind may hold it open: then read what is there and stop when it idles.
        self._reader.join(self._grace)
        if self._reader.is_alive():
            self._stop.set()
            self._reader.join(self._grace)
            log.warning("ansible output still open after the run; stopped reading it")


def _pump(fd: int, sink: Any, stop: threading.Event) -> None:
    """Feed the child's output to ansible-runner's event filter until EOF, or until
    ``stop`` is set and nothing more arrives."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            if not poller.poll(200):
                if stop.is_set():
                    break
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            sink.write(decoder.decode(chunk))
        sink.write(decoder.decode(b"", final=True))
    finally:
        sink.close()
        os.close(fd)
