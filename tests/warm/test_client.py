"""The compiled launch client (``client.c``) is the Python one (``wire.py``), faster.

Each case runs both clients against a stand-in launcher that records the request
and answers as told, and compares what the launcher received and how each client
ended. The real launchers run the compiled client in the rest of tests/warm; the
last case runs them once with the Python client.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner import warm
from runner.warm import pool, wire
from tests.warm.conftest import Run, outputs, ready, started

PYTHON_CLIENT = [sys.executable, "-I", "-S", str(pool.WIRE)]

pytestmark = pytest.mark.skipif(
    pool.compiled_client() is None, reason="the compiled client is not built (make venv)"
)


class Launcher:
    """A stand-in launcher on a Unix socket: records requests, answers as told."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "launcher.sock"
        self.status = directory / "status"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(4)
        self._server.settimeout(20)

    def serve(
        self,
        command: list[str],
        answers: list[dict[str, Any]],
        *,
        env: dict[bytes, bytes],
        stdin: bytes = b"",
    ) -> tuple[dict[str, Any] | None, int, str, bytes]:
        """Run a client; answer its request; (request, exit status, status file, stdout)."""
        self.status.unlink(missing_ok=True)
        process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
        process.stdin = None  # written whole: communicate() only reads
        request: dict[str, Any] | None = None
        if answers:
            conn, _ = self._server.accept()
            with conn:
                request, fds = wire.receive(conn)
                for fd in fds:
                    os.close(fd)
                for answer in answers:
                    wire.send(conn, answer)
        out, _ = process.communicate(timeout=20)
        status = self.status.read_text() if self.status.exists() else ""
        return request, process.returncode, status, out

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    stand_in = Launcher(tmp_path)
    yield stand_in
    stand_in.close()


#: Names and values a client must pass on as Python reads them: not UTF-8, not ASCII.
ENV = {
    b"PATH": b"/usr/bin:/bin",
    b"PLAIN": b"value",
    b"NOT_UTF8": b"\xff\xfe-bytes",
    b"UNICODE": "ünïcødé ✓".encode(),
}


def both(
    launcher: Launcher, arguments: list[str], answers: list[dict[str, Any]], **kwargs: Any
) -> tuple[Any, Any]:
    compiled = pool.compiled_client()
    assert compiled is not None
    results = []
    for client in (PYTHON_CLIENT, [str(compiled)]):
        results.append(launcher.serve([*client, *arguments], answers, env=ENV, **kwargs))
    return results[0], results[1]


@pytest.mark.parametrize(
    ("answers", "code", "status"),
    [
        pytest.param([{"pid": 5}, {"exit": 3}], 3, "warm", id="exit-code"),
        pytest.param([{"pid": 5}, {"signal": 15}], -15, "warm", id="killed-by-signal"),
        pytest.param(
            [{"pid": 5}], wire.LOST_EXIT, "lost: launcher closed the connection", id="lost"
        ),
        pytest.param([{"cold": "a reason"}], 0, "cold: a reason", id="cold"),
    ],
)
def test_both_clients_send_the_same_request_and_end_alike(
    launcher: Launcher, answers: list[dict[str, Any]], code: int, status: str
) -> None:
    arguments = ["--socket", str(launcher.path), "--status", str(launcher.status)]
    arguments += ["--", "/bin/echo", "started cold", "\udcff-arg"]
    python, compiled = both(launcher, arguments, answers)
    assert compiled[0] == python[0], (
        f"expected the Python client's request {python[0]}, got {compiled[0]}"
    )
    assert python[0] is not None and python[0]["env"]["NOT_UTF8"] == "\udcff\udcfe-bytes"
    assert (python[1], python[2]) == (code, status), f"Python client: {python[1:3]}"
    assert compiled[1:] == python[1:], f"expected {python[1:]}, got {compiled[1:]}"


def test_without_a_launcher_both_clients_start_the_program_cold(launcher: Launcher) -> None:
    missing = launcher.path.with_name("nobody.sock")
    arguments = ["--socket", str(missing), "--status", str(launcher.status)]
    python, compiled = both(launcher, [*arguments, "--", "/bin/echo", "cold"], [])
    assert python[1:] == (
        0,
        "cold: launcher unavailable ([Errno 2] No such file or directory)",
        b"cold\n",
    ), python
    assert compiled[1:] == python[1:], f"expected {python[1:]}, got {compiled[1:]}"


def test_as_module_interpreter_both_clients_tell_payloads_from_other_scripts(
    launcher: Launcher,
) -> None:
    arguments = ["--socket", str(launcher.path), "--python", sys.executable]
    payload = b"#!/usr/bin/python\n_ANSIBALLZ_WRAPPER = True\nprint('payload')\n"
    python, compiled = both(launcher, arguments, [{"pid": 9}, {"exit": 0}], stdin=payload)
    assert python[0] is not None and python[0]["kind"] == "module", python[0]
    assert compiled[0] == python[0], f"expected {python[0]}, got {compiled[0]}"
    script = b"print('an ordinary script')\n"
    python, compiled = both(launcher, arguments, [], stdin=script)
    assert python[1:] == (0, "", b"an ordinary script\n"), python
    assert compiled[1:] == python[1:], f"expected {python[1:]}, got {compiled[1:]}"


def test_runs_start_warm_with_the_python_client(
    monkeypatch: pytest.MonkeyPatch, launchers: warm.Launchers, run_warm: Run
) -> None:
    monkeypatch.setattr(pool, "compiled_client", lambda: None)
    ready(launchers, run_warm)
    result = run_warm("inspect")
    assert not result.failed, result.failed_tasks
    assert started(result) == "warm", started(result)
    assert outputs(result)["Module facts"]["preloaded"] is True
    script = (launchers.directory / "python").read_text()
    assert "import wire" in script, f"expected the Python client as interpreter, got {script}"
