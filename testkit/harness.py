"""Runs ``playbook-operator run`` as a real subprocess against the embedded cluster.

Each test gets its own operator process, confined to the test's namespace with
WATCH_NAMESPACE, with its metrics and probes on free loopback ports (read back
from the structured "serving" log lines).
"""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from testkit.helpers import wait_for

FIXTURES = Path(__file__).parent / "fixtures"
T = TypeVar("T")


def scrape(url: str, *, token: str | None = None) -> tuple[int, str]:
    """GET ``url`` (a runner's /metrics) with an optional bearer token: (status, body).

    HTTPS certificates are not verified: the runner's is self-signed, and what the
    tests check is who gets an answer.
    """
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return int(answer.status), str(answer.read().decode())
    except urllib.error.HTTPError as exc:
        return int(exc.code), ""


class OperatorProcess:
    def __init__(
        self,
        *,
        workdir: Path,
        kubeconfig: Path,
        namespace: str,
        watches: str,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.namespace = namespace
        (workdir / "watches.yaml").write_text(watches)
        self.command = [
            sys.executable,
            "-m",
            "runner",
            "run",
            "--watches-file=./watches.yaml",
            f"--kubeconfig={kubeconfig}",
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
            "--custom-metrics-bind-address=0",
            "--proxy-port=0",
            f"--runner-dir={workdir / 'runner'}",
            "--backoff-base=0.5s",
            "--backoff-max=4s",
            "--max-concurrent-reconciles=2",
            "--log-level=debug",
            *args,
        ]
        self.env = {
            **os.environ,
            "WATCH_NAMESPACE": namespace,
            # The repository's watches.yaml has webhooks; serving them needs certificates.
            "ENABLE_WEBHOOKS": os.environ.get("ENABLE_WEBHOOKS", "false"),
            "ANSIBLE_ROLES_PATH": str(FIXTURES / "roles"),
            **(env or {}),
        }
        self.metrics_token: str | None = None  # for --metrics-require-rbac
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self, *, leading: bool = True) -> OperatorProcess:
        """Start and wait until ready; with ``leading`` also until its workers started."""
        self._proc = subprocess.Popen(
            self.command,
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.eventually(
            lambda: self.address("health") is not None and (not leading or self.logged("started")),
            describe="the operator to log 'started'",
            timeout=60,
        )
        self.eventually(self.ready, describe="/readyz to answer 200", timeout=60)
        return self

    def eventually(
        self,
        observe: Callable[[], T],
        *,
        describe: str,
        until: Callable[[T], bool] = bool,
        timeout: float = 60,
    ) -> T:
        """``wait_for`` that adds the operator's exit code and log tail to a failure."""
        try:
            return wait_for(
                observe, describe=describe, until=until, timeout=timeout, ignore=(OSError,)
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\noperator exit code: {self.returncode}; log tail:\n{self.tail()}"
            ) from None

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self.raw.append(line.rstrip())
            try:
                self.lines.append(json.loads(line))
            except ValueError:
                continue

    def tail(self, count: int = 30) -> str:
        return "\n".join(self.raw[-count:])

    def logged(self, msg: str, **fields: Any) -> bool:
        return any(
            line.get("msg") == msg and all(line.get(k) == v for k, v in fields.items())
            for line in list(self.lines)
        )

    def address(self, endpoint: str) -> str | None:
        for line in list(self.lines):
            if line.get("msg") == "serving" and line.get("endpoint") == endpoint:
                return str(line["address"])
        return None

    def ready(self) -> bool:
        address = self.address("health")
        if address is None:
            return False
        try:
            with urllib.request.urlopen(f"http://{address}/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        """The /metrics text, over HTTPS with ``metrics_token`` when the runner serves so."""
        address = self.address("metrics")
        assert address, f"no metrics endpoint logged; log tail:\n{self.tail()}"
        scheme = "https" if self.logged("serving", endpoint="metrics", scheme="https") else "http"
        code, body = scrape(f"{scheme}://{address}/metrics", token=self.metrics_token)
        assert code == 200, f"GET /metrics answered {code}: {body[:300]}"
        return body

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` whose labels include ``labels``."""
        total = 0.0
        for line in self.metrics().splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            match = re.match(r"^([^{ ]+)(?:\{(.*)\})? (.+)$", line)
            if not match:
                continue
            found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
            if all(found.get(k) == v for k, v in labels.items()):
                total += float(match.group(3))
        return total

    def runs(self) -> int:
        """Ansible runs so far, as counted by the runner's own histogram."""
        return int(self.metric("playbook_operator_ansible_run_duration_seconds_count"))

    def triggers(self) -> str:
        """The logged enqueue events: why each reconcile happened."""
        return "\n".join(
            f"{line.get('ts')} {line.get('msg')} {line.get('event')} {line.get('object')}"
            for line in list(self.lines)
            if line.get("msg") in ("enqueued", "dependent changed")
        )

    def stop(self, *, timeout: float = 60) -> int:
        if self._proc is None:
            return 0
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            return self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            return self._proc.wait()

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None
