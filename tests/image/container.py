"""The operator image built with podman and run as a container, as the manager Deployment runs it.

``build`` makes the image with ``hack/image/build-local.sh`` (the local stand-in base, then
the project's Dockerfile; cached by podman when nothing changed). ``ManagerContainer`` runs
it the way ``config/manager/manager.yaml`` (with ``config/default``'s metrics patch) runs
the manager pod, translated to podman:

- the image's own user (uid 1001), all capabilities dropped, no privilege escalation;
- a read-only root filesystem with the Deployment's two emptyDirs as tmpfs mounts
  (``/tmp`` and ``/opt/ansible/.ansible``), and nothing else writable;
- in-cluster configuration: the ServiceAccount's token, the cluster CA and the namespace
  at ``/var/run/secrets/kubernetes.io/serviceaccount``, ``KUBERNETES_SERVICE_HOST`` and
  ``_PORT`` naming the API server, reached over the host's network (``--network=host``:
  the embedded API server listens on loopback);
- the Deployment's arguments and environment, apart from ports (free ones, since the
  host's network is shared) and ``WATCH_NAMESPACE`` (one namespace, since the cluster is
  shared with other tests).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from testkit.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = ROOT / "hack" / "image" / "containers.conf"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
T = TypeVar("T")


def podman_env() -> dict[str, str]:
    """The environment podman runs in: hack/image/containers.conf unless one is set."""
    return {"CONTAINERS_CONF": str(CONTAINERS_CONF), **os.environ}


def missing_tools() -> list[str]:
    """What ``.ci/run`` installs for the image tests and this host lacks."""
    return [tool for tool in ("podman", "debootstrap") if shutil.which(tool) is None]


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["podman", *args], capture_output=True, text=True, check=False, env=podman_env()
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"podman {' '.join(args)}: expected exit 0, saw {done.returncode}\n{done.stderr}"
        )
    return done


def build(*, image: str, log: Path) -> float:
    """Build ``image`` with make docker-build-local's script; returns the seconds it took."""
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(
            [str(ROOT / "hack" / "image" / "build-local.sh"), image],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=podman_env(),
            check=False,
        )
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        raise AssertionError(f"image build: expected exit 0, saw {done.returncode}\n{tail}")
    return time.monotonic() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_service_account(directory: Path, *, token: str, ca: bytes, namespace: str) -> Path:
    """What the kubelet projects into a pod for its ServiceAccount, readable by uid 1001."""
    directory.mkdir(mode=0o755)
    for name, data in (
        ("token", token.encode()),
        ("ca.crt", ca),
        ("namespace", namespace.encode()),
    ):
        (directory / name).write_bytes(data)
        (directory / name).chmod(0o644)
    return directory


class ManagerContainer:
    """``podman run`` of the operator image in the foreground; its log lines read as they come."""

    def __init__(
        self,
        *,
        image: str,
        name: str,
        server: str,
        service_account: Path,
        watch_namespace: str,
    ) -> None:
        api = urlsplit(server)
        self.name = name
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.command = [
            "podman",
            "run",
            "--rm",
            f"--name={name}",
            "--network=host",
            "--read-only",
            "--read-only-tmpfs=false",
            # The Deployment's emptyDirs: writable by anyone, executables allowed.
            "--tmpfs=/tmp:rw,exec,nosuid,nodev,mode=1777",
            "--tmpfs=/opt/ansible/.ansible:rw,exec,nosuid,nodev,mode=0777",
            "--cap-drop=ALL",
            "--security-opt=no-new-privileges",
            f"--volume={service_account}:{SERVICE_ACCOUNT_DIR}:ro",
            f"--env=KUBERNETES_SERVICE_HOST={api.hostname}",
            f"--env=KUBERNETES_SERVICE_PORT={api.port or 443}",
            "--env=ANSIBLE_GATHERING=explicit",
            f"--env=WATCH_NAMESPACE={watch_namespace}",
            # config/manager's: the webhooks need config/default's [WEBHOOK] certificate.
            "--env=ENABLE_WEBHOOKS=false",
            image,
            # config/manager/manager.yaml's args, then config/default's metrics patch.
            "--leader-elect",
            "--leader-election-id=memcached-operator",
            f"--health-probe-bind-address=:{self.health_port}",
            f"--metrics-bind-address=:{self.metrics_port}",
            "--metrics-secure",
            "--metrics-require-rbac",
            # Loopback is the host's: the roles' metrics endpoint must not take 5050.
            "--custom-metrics-bind-address=0",
        ]
        #: (seconds since ``start``, parsed JSON) for each line the runner logged.
        self.lines: list[tuple[float, dict[str, Any]]] = []
        self.raw: list[str] = []
        self.started_at = 0.0
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> ManagerContainer:
        self.started_at = time.monotonic()
        self._proc = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=podman_env(),
        )
        for stream in (self._proc.stdout, self._proc.stderr):
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()
        return self

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.raw.append(line.rstrip())
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                self.lines.append((time.monotonic() - self.started_at, parsed))

    def first(self, msg: str, **fields: Any) -> float | None:
        """Seconds from ``start`` to the first line ``msg`` with ``fields``, if logged yet."""
        for when, line in list(self.lines):
            if line.get("msg") == msg and all(line.get(k) == v for k, v in fields.items()):
                return when
        return None

    def tail(self, count: int = 40) -> str:
        return "\n".join(self.raw[-count:])

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def eventually(
        self,
        observe: Callable[[], T],
        *,
        describe: str,
        until: Callable[[T], bool] = bool,
        timeout: float = 120,
        ignore: tuple[type[Exception], ...] = (),
    ) -> T:
        """``wait_for`` that adds the container's exit code and log tail to a failure."""
        try:
            return wait_for(
                observe,
                describe=describe,
                until=until,
                timeout=timeout,
                ignore=(OSError, *ignore),
            )
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\ncontainer exit code: {self.returncode}; log tail:\n{self.tail()}"
            ) from None

    def exec(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *args, check=check)

    def stop(self, *, timeout: int = 30) -> int:
        """SIGTERM through tini, as the kubelet stops a pod; the container's exit code."""
        if self._proc is None:
            return 0
        if self._proc.poll() is None:
            podman("stop", f"--time={timeout}", self.name, check=False)
        try:
            return self._proc.wait(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            podman("rm", "--force", self.name, check=False)
            return self._proc.wait()
