"""A TCP relay between a runner and the API server that a test can freeze, thaw or reset.

Tests of fencing need a network partition that leaves connections open but silent, as a
dead switch or a stalled load balancer does: nothing errors, bytes just stop. The relay
runs in its own Python subprocess so ``freeze()`` can SIGSTOP it (the kernel keeps its
sockets open and even completes new handshakes into the listen backlog, but no byte
moves) and ``thaw()`` can SIGCONT it. ``reset()`` drops every open connection with a
RST and keeps listening on the same port: the listening socket belongs to this (test)
process and is handed to each relay process, so a reset kills the relay process (which
works even while it is frozen; every relayed socket has SO_LINGER 0, so the kernel
sends RST as it closes them) and starts a fresh one on the same socket. 127.0.0.1 only.

Usage::

    relay = Relay(target_host="127.0.0.1", target_port=6443)
    kubeconfig = write_kubeconfig(cluster.kubeconfig, tmp_path / "kubeconfig", port=relay.port)
    ...
    relay.freeze()
    relay.thaw()
    relay.close()

This file is also the relay process's program (``python relay.py --listen-fd N ...``,
run by the interpreter that imported it).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

_CHUNK = 65536
_MAX_CONNECTIONS = 256  # a bounded listener: beyond this, new connections are reset
_CONNECT_TIMEOUT = 5.0
_STOP_TIMEOUT = 10.0
_READY_TIMEOUT = 30.0
_PR_SET_PDEATHSIG = 1


class Relay:
    """A TCP relay in its own subprocess, listening on 127.0.0.1:``port``."""

    def __init__(self, *, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._frozen = False
        self._process: subprocess.Popen[bytes] | None = None
        self._start()

    def _start(self) -> None:
        """Start a relay process on the listener; return once it is up (it dies with
        this process from then on, even if frozen at once)."""
        fd = self._listener.fileno()
        ready_r, ready_w = os.pipe()
        try:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--listen-fd",
                    str(fd),
                    "--target-host",
                    self.target_host,
                    "--target-port",
                    str(self.target_port),
                    "--parent",
                    str(os.getpid()),
                    "--ready-fd",
                    str(ready_w),
                ],
                pass_fds=(fd, ready_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the test's terminal is for pytest
            )
            os.close(ready_w)
            ready_w = -1
            readable, _, _ = select.select([ready_r], [], [], _READY_TIMEOUT)
            if not readable or os.read(ready_r, 1) != b"r":
                self._process.kill()
                self._process.wait(timeout=10)
                raise RuntimeError(f"the relay did not start within {_READY_TIMEOUT:g}s")
        finally:
            os.close(ready_r)
            if ready_w >= 0:
                os.close(ready_w)

    @property
    def pid(self) -> int:
        assert self._process is not None, "relay is closed"
        return self._process.pid

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """SIGSTOP the relay: connections stay open, bytes stop (both ways).

        Returns once every thread of the relay has stopped: a stop reaches the
        threads one by one, and on a busy machine one could still pass bytes."""
        os.kill(self.pid, signal.SIGSTOP)
        self._frozen = True
        deadline = time.monotonic() + _STOP_TIMEOUT
        while not self._stopped():
            if time.monotonic() > deadline:
                raise RuntimeError(f"relay {self.pid} not stopped {_STOP_TIMEOUT:g}s after SIGSTOP")
            time.sleep(0.005)  # the kernel gives no event to wait on for another's stop

    def _stopped(self) -> bool:
        """Whether every thread of the relay process is stopped (state T in /proc)."""
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
            states = []
            for task in tasks:
                with open(f"/proc/{self.pid}/task/{task}/stat", encoding="ascii") as handle:
                    states.append(handle.read().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):
            return False
        return all(state in ("T", "t") for state in states)

    def thaw(self) -> None:
        """SIGCONT the relay: bytes flow again on the connections it kept."""
        os.kill(self.pid, signal.SIGCONT)
        self._frozen = False

    def reset(self) -> None:
        """Drop every open connection with a RST; keep listening on the same port.

        A frozen relay stays frozen: the new relay process is stopped too, so new
        connections queue in the listen backlog as before.
        """
        self._stop_process()
        self._start()
        if self._frozen:
            self.freeze()

    def close(self) -> None:
        """Stop the relay (open connections are reset) and the listener."""
        if self._process is not None:
            self._stop_process()
            self._process = None
        self._listener.close()

    def _stop_process(self) -> None:
        assert self._process is not None, "relay is closed"
        self._process.kill()  # SIGKILL also ends a stopped process
        self._process.wait(timeout=10)

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def api_address(kubeconfig: Path) -> tuple[str, int]:
    """The (host, port) of the current context's API server in ``kubeconfig``: the target."""
    doc: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
    clusters = {c["name"]: c["cluster"] for c in doc.get("clusters") or []}
    current = contexts.get(doc.get("current-context", ""))
    cluster = clusters[current["cluster"]] if current else next(iter(clusters.values()))
    parsed = urllib.parse.urlsplit(cluster["server"])
    assert parsed.hostname, f"no host in the server {cluster['server']!r} of {kubeconfig}"
    return parsed.hostname, parsed.port or 443


def write_kubeconfig(source: Path, target: Path, *, port: int) -> Path:
    """Copy the kubeconfig ``source`` to ``target`` with every server at 127.0.0.1:``port``.

    The embedded cluster's serving certificate names 127.0.0.1 among its SANs, so TLS
    verification (and the hostname check) passes through the relay unchanged.
    """
    doc: dict[str, Any] = yaml.safe_load(source.read_text())
    for entry in doc.get("clusters") or []:
        entry["cluster"]["server"] = f"https://127.0.0.1:{port}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600)  # it holds credentials
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


# -- the relay process ---------------------------------------------------------------


def _abort(sock: socket.socket) -> None:
    """Close with RST rather than FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()


def _pump(src: socket.socket, dst: socket.socket, done: threading.Event) -> None:
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)  # pass a FIN on; the other direction may continue
    except OSError:
        _abort(src)
        _abort(dst)
    finally:
        done.set()


def _relay(client: socket.socket, *, target: tuple[str, int], slots: threading.Semaphore) -> None:
    try:
        try:
            upstream = socket.create_connection(target, timeout=_CONNECT_TIMEOUT)
        except OSError:
            _abort(client)
            return
        upstream.settimeout(None)
        upstream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        both = [threading.Event(), threading.Event()]
        threading.Thread(target=_pump, args=(client, upstream, both[0]), daemon=True).start()
        _pump(upstream, client, both[1])
        both[0].wait()
        client.close()
        upstream.close()
    finally:
        slots.release()


def _die_with(parent: int) -> None:
    """End the relay with the process that started it, even while frozen: the kernel
    sends SIGKILL (which a stopped process takes) when the parent thread that started
    it exits (PR_SET_PDEATHSIG; so make a Relay on a thread that outlives it). A
    thread also watches, where prctl is not to be had, and for a parent gone before."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _serve(*, listen_fd: int, target: tuple[str, int]) -> None:
    listener = socket.socket(fileno=listen_fd)
    slots = threading.Semaphore(_MAX_CONNECTIONS)
    while True:
        client, _ = listener.accept()
        # SO_LINGER 0: when this process is killed (reset), the kernel resets the connection.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if not slots.acquire(blocking=False):
            _abort(client)
            continue
        threading.Thread(
            target=_relay, args=(client,), kwargs={"target": target, "slots": slots}, daemon=True
        ).start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--target-host", required=True)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--ready-fd", type=int, required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(args.parent)
    os.write(args.ready_fd, b"r")
    os.close(args.ready_fd)
    _serve(listen_fd=args.listen_fd, target=(args.target_host, args.target_port))


if __name__ == "__main__":
    main()
