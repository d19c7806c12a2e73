"""The launch protocol between a warm launcher and its clients, and the client itself.

Part of :mod:`runner.warm`. A client asks a launcher (:mod:`runner.warm.zygote`)
to start a program as if it had been exec'd here: it sends its argv,
environment, working directory and umask over a Unix socket, with its own
stdin, stdout and stderr attached (``SCM_RIGHTS``). Messages are
``marshal``-ed dicts (both ends are the same Python). The launcher answers
``{"pid": …}`` once it forked, then ``{"exit": code}`` or ``{"signal": n}``
when the program ended; or ``{"cold": reason}`` when it cannot serve the request
as a warm start, and the client then execs the program itself — a cold start,
the same as without a launcher. Signals the client receives are relayed to
the program; if the client dies, the launcher kills the program.

Run as a script, this module *is* the client. It is started with
``python -I -S`` and imports only built-in C modules (``_socket``, ``_signal``,
``marshal``: no ``json``, ``socket`` or ``typing``, each of which would cost more
than the rest of the client), so it costs about 10 ms. ``client.c`` is the same
client compiled (about 1 ms), which the runner uses when it was built:

* ``wire.py --socket S [--status F] -- PROGRAM ARGS…`` — start PROGRAM through
  the launcher on S. F receives ``warm``, ``cold: <reason>`` or ``lost: <reason>``
  (the launcher died mid-run: the caller should run again cold).
* ``wire.py --socket S --python P [ARGS…]`` — a Python interpreter for Ansible
  modules: an AnsiballZ payload (``AnsiballZ_*.py``, or piped on stdin) runs
  in a forked, pre-imported interpreter; anything else execs ``P ARGS…``.
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # no stub; `signal` imports enum
import _socket as socket
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

_LENGTH_BYTES = 4
_INT = 4  # a C int, as SCM_RIGHTS carries descriptors
_MAX_MESSAGE = 64 * 1024 * 1024
_MAX_FDS = 3
#: Relayed to the program; SIGKILL and SIGSTOP cannot be caught, a dead client is noticed.
RELAYED_SIGNALS = (
    *(signal.SIGTERM, signal.SIGINT, signal.SIGHUP),
    *(signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2),
)
#: Exit code of a client whose launcher died mid-run (the status file says why).
LOST_EXIT = 111
#: A Python script piped on stdin is an AnsiballZ payload when it says so early on.
ANSIBALLZ_MARK = b"_ANSIBALLZ_WRAPPER = True"


class ProtocolError(Exception):
    """The peer sent something that is not a message of this protocol."""


def send(sock: socket.socket, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
    """One length-prefixed message, with ``fds`` attached to its first byte."""
    body = marshal.dumps(message)
    data = len(body).to_bytes(_LENGTH_BYTES, "big") + body
    if fds:
        packed = b"".join(fd.to_bytes(_INT, sys.byteorder, signed=True) for fd in fds)
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, packed)]
        sent = sock.sendmsg([data], rights)
        data = data[sent:]
    if data:
        sock.sendall(data)


def receive(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The next message and the fds that came with it; ``(None, [])`` at end of stream."""
    fds: list[int] = []
    head = _read_exactly(sock, _LENGTH_BYTES, fds)
    if head is None:
        return None, fds
    length = int.from_bytes(head, "big")
    if length > _MAX_MESSAGE:
        raise ProtocolError(f"message of {length} bytes is too large")
    body = _read_exactly(sock, length, fds)
    if body is None:
        raise ProtocolError("connection closed inside a message")
    try:
        message = marshal.loads(body)
    except (EOFError, ValueError, TypeError) as exc:
        raise ProtocolError(f"undecodable message: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return message, fds


def _read_exactly(sock: socket.socket, count: int, fds: list[int]) -> bytes | None:
    chunks = b""
    space = socket.CMSG_SPACE(_MAX_FDS * _INT)
    while len(chunks) < count:
        data, ancillary, _, _ = sock.recvmsg(count - len(chunks), space)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                whole = len(payload) - len(payload) % _INT
                fds.extend(
                    int.from_bytes(payload[i : i + _INT], sys.byteorder, signed=True)
                    for i in range(0, whole, _INT)
                )
        if not data:
            if chunks:
                raise ProtocolError("connection closed inside a message")
            return None
        chunks += data
    return chunks


def request_for(argv: list[str], *, kind: str) -> dict[str, Any]:
    """What a launcher needs to start ``argv`` as if exec'd by this process."""
    umask = os.umask(0)
    os.umask(umask)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "/"
    return {"kind": kind, "argv": argv, "env": dict(os.environ), "cwd": cwd, "umask": umask}


# -- the client ------------------------------------------------------------------


def _exec(program: str, argv: list[str], *, status: str | None, note: str) -> NoReturn:
    """Become ``argv`` the ordinary way: a cold start."""
    _write_status(status, note)
    sys.stdout.flush()
    os.execv(program, argv)


def _write_status(path: str | None, text: str) -> None:
    if path is None:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _is_payload(args: list[str]) -> bool:
    """``python AnsiballZ_x.py``: how Ansible runs a module without pipelining."""
    return len(args) == 1 and os.path.basename(args[0]).startswith("AnsiballZ_")


def _piped_payload() -> int | None:
    """With pipelining the payload comes on stdin. Read it into a memory file so it
    can be inspected and still be read whole by whoever runs it; None if stdin is a
    terminal or closed (an interactive interpreter is never a module)."""
    try:
        if os.isatty(0):
            return None
        data = os.read(0, 1 << 20)
    except OSError:  # no stdin at all (a daemonized task): not a pipelined payload
        return None
    while chunk := os.read(0, 1 << 20):
        data += chunk
    memory = os.memfd_create("ansible-payload")
    os.write(memory, data)
    os.lseek(memory, 0, os.SEEK_SET)
    os.dup2(memory, 0)
    os.close(memory)
    return 1 if ANSIBALLZ_MARK in data[:4096] else 0


def _relay_signals(sock: socket.socket) -> None:
    def relay(signum: int, _frame: object) -> None:
        try:
            send(sock, {"signal": signum})
        except OSError:
            return  # the launcher is gone; the run ends with it

    for signum in RELAYED_SIGNALS:
        signal.signal(signum, relay)


def _finish(message: dict[str, Any]) -> NoReturn:
    """Exit as the program did: with its code, or killed by its signal."""
    if "signal" in message:
        signum = int(message["signal"])
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal whose default is not to terminate
    os._exit(int(message.get("exit", 1)))


def client(argv: list[str]) -> NoReturn:
    """``wire.py`` as a program (see the module doc)."""
    socket_path, status, python, program = _parse(argv)
    if python is not None:
        args = program
        program = [python, *args]
        warm = _is_payload(args)
        if not args:
            warm = _piped_payload() == 1
        if not warm:
            _exec(python, program, status=None, note="")
        kind = "module"
    else:
        kind = "program"
    target = program[0]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(socket_path)
        send(sock, request_for(program, kind=kind), fds=(0, 1, 2))
        started, _ = receive(sock)
    except (OSError, ProtocolError) as exc:
        sock.close()
        _exec(target, program, status=status, note=f"cold: launcher unavailable ({exc})")
    if started is None or "cold" in started:
        sock.close()
        reason = started["cold"] if started else "launcher closed the connection"
        _exec(target, program, status=status, note=f"cold: {reason}")
    _write_status(status, "warm")
    _relay_signals(sock)
    try:
        ended, _ = receive(sock)
    except (OSError, ProtocolError) as exc:
        ended, lost = None, str(exc)
    else:
        lost = "launcher closed the connection"
    if ended is None or not ("exit" in ended or "signal" in ended):
        _write_status(status, f"lost: {lost}")
        os._exit(LOST_EXIT)
    _finish(ended)


def _parse(argv: list[str]) -> tuple[str, str | None, str | None, list[str]]:
    socket_path = status = python = None
    rest = list(argv)
    while rest:
        option = rest.pop(0)
        if option == "--":
            break
        if option in ("--socket", "--status", "--python") and rest:
            value = rest.pop(0)
            if option == "--socket":
                socket_path = value
            elif option == "--status":
                status = value
            else:
                python = value
                break  # everything after the interpreter is its own arguments
        else:
            sys.exit(f"wire.py: unexpected argument {option!r}")
    if socket_path is None or (python is None and not rest):
        sys.exit("usage: wire.py --socket S [--status F] -- PROGRAM ARGS... | --python P ARGS...")
    return socket_path, status, python, rest


if __name__ == "__main__":
    client(sys.argv[1:])
