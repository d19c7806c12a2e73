"""The chaos benchmark's runners: two ``--leader-elect`` replicas, each behind its own relay.

Part of ``make chaos`` (``python -m bench.chaos``). Each replica is a real ``playbook-operator
run`` (``testkit/harness.py``) whose kubeconfig points at a ``testkit/relay.py``
relay in front of the API server, so the benchmark can freeze and reset the leader's
connection alone. A supervisor thread per replica starts it again whenever it exits
(as a Deployment would), unless the benchmark holds it, and then looks for what the
dead process left behind: every process a runner starts inherits the environment
variable ``CHAOS_INSTANCE=<replica>-<n>``, so an ansible-playbook or launcher still
carrying a dead instance's mark once ``orphan_grace`` has passed is an orphan.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bench import accounting
from testkit import relay as relays
from testkit.harness import OperatorProcess

MARK = "CHAOS_INSTANCE"
#: Seconds between two starts of a replica that keeps failing to start.
RESTART_DELAY = 2.0
T = TypeVar("T")


@dataclass(frozen=True)
class Exit:
    instance: str
    code: int | None
    at: float
    tail: str  # the last log lines, for an exit nobody asked for


@dataclass(frozen=True)
class Orphan:
    instance: str
    pid: int
    command: str


@dataclass(kw_only=True)
class Config:
    """What every replica shares."""

    workdir: Path
    namespace: str
    watches: str
    args: tuple[str, ...]
    orphan_grace: float
    env: dict[str, str] = field(default_factory=dict)
    #: False only for the benchmark's control run: both replicas reconcile at once.
    elect: bool = True


class _Process(OperatorProcess):
    """The harness's runner process, whose waits give up as soon as it has exited.

    A replica started while the API server is unreachable may exit at once; waiting
    out the harness's 60 s for it would leave the replica down for that long.
    """

    def eventually(
        self,
        observe: Callable[[], T],
        *,
        describe: str,
        until: Callable[[T], bool] = bool,
        timeout: float = 60,
    ) -> T:
        def alive_first() -> T:
            if self.returncode is not None:
                raise AssertionError(f"the operator exited ({self.returncode})")
            return observe()

        return super().eventually(alive_first, describe=describe, until=until, timeout=timeout)


def marked(value: str, *, workdir: Path) -> list[int]:
    """Live processes of instance ``value``: ``CHAOS_INSTANCE=<value>`` in their
    environment, or ``workdir`` (its runner dir, private data dirs) in their command line.
    """
    needle = f"\0{MARK}={value}\0".encode()
    path = f"{workdir}/".encode()  # not a prefix of a-10/ for a-1/
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = b"\0" + Path(f"/proc/{entry}/environ").read_bytes() + b"\0"
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and (needle in environ or path in command):
            found.append(int(entry))
    return found


class Replica:
    """One runner replica: its relay, its current process, its exits and orphans."""

    def __init__(self, *, name: str, relay: relays.Relay, kubeconfig: Path, config: Config) -> None:
        self.name = name
        self.relay = relay
        self.kubeconfig = kubeconfig
        self.config = config
        self.process: OperatorProcess | None = None
        self.instance = ""
        self.starts = 0
        self.exits: list[Exit] = []
        self.orphans: list[Orphan] = []
        self.held = False  # the benchmark starts and stops it itself for now
        self._terminated = ""  # the instance already sent SIGTERM (a second one may be fatal)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._checks: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._supervise, daemon=True)

    # -- the process -----------------------------------------------------------

    def start(self) -> None:
        """Start a new instance; returns once it is ready (a standby, or leading)."""
        with self._lock:
            self.starts += 1
            self.instance = f"{self.name}-{self.starts}"
            workdir = self.config.workdir / self.instance
            workdir.mkdir(parents=True, exist_ok=True)
            self.process = _Process(
                workdir=workdir,
                kubeconfig=self.kubeconfig,
                namespace=self.config.namespace,
                watches=self.config.watches,
                args=self.config.args,
                env={**self.config.env, MARK: self.instance},
            )
            process, instance = self.process, self.instance
        try:
            process.start(leading=False)
        except AssertionError:
            # Not ready in time (the API unreachable): end it; the supervisor retries.
            self._kill(process)
            self._exited(instance, process)
            raise

    def pid(self) -> int | None:
        process = self.process
        proc = process._proc if process is not None else None
        return proc.pid if proc is not None and proc.poll() is None else None

    def leading(self) -> bool:
        """Alive, and its current instance won the Lease and has not lost it.

        Without election (the control run) every started replica counts as leading.
        """
        process = self.process
        return (
            self.pid() is not None
            and process is not None
            and process.logged("became leader" if self.config.elect else "started")
            and not process.logged("leadership lost")
            and not process.logged("released leadership")
        )

    def kill(self) -> None:
        """``kill -9`` the current instance (the supervisor starts a new one)."""
        if self.process is not None:
            self._kill(self.process)

    def terminate(self) -> None:
        """SIGTERM the current instance once, without waiting (it releases its Lease)."""
        pid = self.pid()
        if pid is not None and self._terminated != self.instance:
            self._terminated = self.instance
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def stop(self) -> None:
        """Hold the replica and stop its instance gracefully (SIGTERM, then wait)."""
        self.held = True
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()  # it may be starting a new instance: wait for that first
        self.terminate()
        process = self.process
        if process is not None and process._proc is not None:
            try:
                process._proc.wait(timeout=60)  # after terminate(): no second SIGTERM
            except subprocess.TimeoutExpired:
                process.stop(timeout=1)
            self._exited(self.instance, process)

    def rss(self) -> int:
        """RSS of the current instance and every process below it (its launchers)."""
        pid = self.pid()
        return accounting.rss_bytes(accounting.descendants(pid)) if pid is not None else 0

    @staticmethod
    def _kill(process: OperatorProcess) -> None:
        proc = process._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    # -- supervision -----------------------------------------------------------

    def supervise(self) -> Replica:
        self._thread.start()
        return self

    def _supervise(self) -> None:
        while not self._stop.wait(0.5):
            process = self.process
            if self.held or process is None or process.returncode is None:
                continue
            self._exited(self.instance, process)
            try:
                self.start()
            except AssertionError:  # the API server is unreachable: like a crash loop
                self._stop.wait(RESTART_DELAY)

    def _exited(self, instance: str, process: OperatorProcess) -> None:
        if any(e.instance == instance for e in self.exits):
            return
        with contextlib.suppress(OSError):  # kept for post-mortems with --keep
            (process.workdir / "runner.log").write_text("\n".join(process.raw) + "\n")
        self.exits.append(
            Exit(instance=instance, code=process.returncode, at=time.time(), tail=process.tail(8))
        )
        check = threading.Thread(target=self._look_for_orphans, args=(instance,), daemon=True)
        check.start()
        self._checks.append(check)

    def _look_for_orphans(self, instance: str) -> None:
        deadline = time.monotonic() + self.config.orphan_grace
        workdir = self.config.workdir / instance
        left = marked(instance, workdir=workdir)
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            left = marked(instance, workdir=workdir)
        self.orphans += [Orphan(instance, pid, accounting.cmdline(pid)[:200]) for pid in left]

    def wait_checks(self) -> None:
        """Wait for the orphan checks of every instance that has exited."""
        for check in list(self._checks):
            check.join()


def start_pair(*, config: Config, apiserver_port: int, kubeconfig: Path) -> list[Replica]:
    """Two replicas, each behind its own relay; the first leads when this returns."""
    replicas = []
    for name in ("a", "b"):
        relay = relays.Relay(target_host="127.0.0.1", target_port=apiserver_port)
        own = relays.write_kubeconfig(
            kubeconfig, config.workdir / f"{name}.kubeconfig", port=relay.port
        )
        replicas.append(Replica(name=name, relay=relay, kubeconfig=own, config=config))
    try:
        replicas[0].start()
        leader(replicas, timeout=60)
        replicas[1].start()
    except BaseException:
        close(replicas)
        raise
    for replica in replicas:
        replica.supervise()
    return replicas


def leader(replicas: list[Replica], *, timeout: float, other_than: str = "") -> Replica:
    """The replica that leads now (an instance other than ``other_than``), waiting for one."""
    deadline = time.monotonic() + timeout
    while True:
        found = [r for r in replicas if r.leading() and r.instance != other_than]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            states = ", ".join(f"{r.instance}: pid {r.pid()}" for r in replicas)
            raise TimeoutError(f"expected a replica to lead within {timeout:g}s; saw {states}")
        time.sleep(0.2)


def close(replicas: list[Replica]) -> None:
    """Stop every replica: SIGTERM to all first, so none takes over from another."""
    for replica in replicas:
        replica.held = True
    for replica in replicas:
        replica.terminate()
    for replica in replicas:
        with contextlib.suppress(Exception):
            replica.stop()
        with contextlib.suppress(Exception):
            replica.relay.close()
