"""The runtimes the benchmarks drive, behind one small interface.

- :class:`Ours` — ``playbook-operator run`` (through the tests' harness), warm or cold;
- :class:`AnsibleOperator` — operator-sdk's Go ``ansible-operator`` v1.31, built by
  ``hack/ansible-operator/build.sh`` (``make bench-compare``).

Each is started in one namespace (``WATCH_NAMESPACE``) with 2 workers and
``ANSIBLE_GATHERING=explicit``, and answers: how many Ansible runs it finished
(:meth:`runs`), the CPU seconds of its process tree (:meth:`cpu`), and the
resident memory of the runtime itself (:meth:`rss`: our runner and its warm
launchers; the Go process) and of its whole tree (:meth:`tree_rss`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from bench import accounting, ports, workloads
from runner.config import sections
from testkit.harness import OperatorProcess

ANSIBLE_OPERATOR = workloads.ROOT / "bin" / "ansible-operator"
ANSIBLE_OPERATOR_VENV = workloads.ROOT / ".venv-ansible-operator"
#: Hard-coded by ansible-operator v1.31: its proxy, its osdk_metric server, its artifacts.
ANSIBLE_OPERATOR_PORTS = (8888, 5050)
ANSIBLE_OPERATOR_ARTIFACTS = Path("/tmp/ansible-operator")
#: Errors ansible-operator's runner logs for a job that do not end its run.
_NOT_RUN_ENDS = frozenset(
    {
        "Error from event API",
        "Latest artifacts dir has error",
        "Error removing the latest artifacts symlink",
    }
)


class Runtime(Protocol):
    name: str

    @property
    def pid(self) -> int: ...

    def start(self) -> Runtime: ...

    def stop(self) -> None: ...

    def runs(self) -> int: ...

    def rss(self) -> int: ...


def launcher_idle_seconds() -> float | None:
    """The runner's default ``--warm-launcher-idle-seconds``: how long a warm launcher
    may sit idle before it exits. None when this runner has no such setting (older
    code) or never releases them (0)."""
    defaults = {f.name: f.default for f in dataclasses.fields(sections.AnsibleSettings)}
    seconds = defaults.get("warm_launcher_idle_seconds")
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None


def cpu(runtime: Runtime) -> float:
    return accounting.cpu_seconds(runtime.pid)


def tree_rss(runtime: Runtime) -> int:
    return accounting.rss_bytes(accounting.descendants(runtime.pid))


class Ours:
    """``playbook-operator run`` with ``--warm=true`` or ``--warm=false``."""

    def __init__(
        self, *, warm: bool, workdir: Path, kubeconfig: Path, namespace: str, watches: str
    ) -> None:
        self.name = "warm" if warm else "cold"
        self.warm = warm
        workdir.mkdir(parents=True, exist_ok=True)
        self._process = OperatorProcess(
            workdir=workdir,
            kubeconfig=kubeconfig,
            namespace=namespace,
            watches=watches,
            # the runner dir is private to this process (never ansible-operator's)
            args=("--max-concurrent-reconciles=2", f"--warm={str(warm).lower()}"),
            env={"ANSIBLE_GATHERING": "explicit"},
        )

    @property
    def pid(self) -> int:
        proc = self._process._proc
        assert proc is not None, "not started"
        return proc.pid

    def start(self) -> Ours:
        self._process.start()
        return self

    def stop(self) -> None:
        self._process.stop()

    def runs(self) -> int:
        return self._process.runs()

    def triggers(self) -> tuple[int, int]:
        """Watch events that asked for a reconcile so far, from the runner's debug log:
        (events of the CRs themselves, events of their children)."""
        lines = list(self._process.lines)
        own = sum(1 for line in lines if line.get("msg") == "enqueued" and not line.get("initial"))
        children = sum(1 for line in lines if line.get("msg") == "dependent changed")
        return own, children

    def requeued(self) -> int:
        """Runs after which the role asked to be run again (``requeue_after``)."""
        return int(
            self._process.metric("playbook_operator_reconcile_total", result="requeue_after")
        )

    def warm_starts(self) -> int:
        # a counter: exposed with the _total suffix
        return int(
            self._process.metric("playbook_operator_ansible_starts_total", mode="warm")
            + self._process.metric("playbook_operator_ansible_starts", mode="warm")
        )

    def launchers(self) -> list[int]:
        """The runner's warm launchers: its own children running the zygote (a run
        forked from a launcher has the same command line, but the launcher as parent)."""
        return [
            pid
            for pid in accounting.descendants(self.pid)[1:]
            if accounting.parent(pid) == self.pid
            and "runner.warm import zygote" in accounting.cmdline(pid)
        ]

    def cpu_parts(self) -> dict[str, float]:
        """CPU seconds so far by where they went: ``runner`` (itself, and cold runs it
        reaped), ``playbook`` (ansible-playbook runs forked by program launchers, their
        task workers included), ``modules`` (modules forked by the module launcher),
        ``launchers`` (the launchers' own work)."""
        parts = dict.fromkeys(("runner", "playbook", "modules", "launchers"), 0.0)
        for pid in [self.pid, *self.launchers()]:
            own, reaped = accounting.cpu_split(pid)
            if pid == self.pid:
                parts["runner"] += own + reaped
                continue
            parts["launchers"] += own
            parts["modules" if "--kind module" in accounting.cmdline(pid) else "playbook"] += reaped
        return parts

    def rss(self) -> int:
        """The runner and its warm launchers (not the runs they fork)."""
        return accounting.rss_bytes([self.pid, *self.launchers()])

    def warm_up(self, create: Callable[[int], object], *, timeout: float = 120) -> int:
        """Reconcile throw-away CRs until runs start warm (cold: two runs); how many it took."""
        deadline = time.monotonic() + timeout
        count = 0
        while time.monotonic() < deadline:
            count += 1
            create(count)
            if not self.warm:
                if count >= 2:
                    return count
            elif self.warm_starts() >= 2:  # playbook and module launchers both used
                return count
        raise TimeoutError(f"{self.name}: no warm run after {count} warm-up reconciles")


class AnsibleOperator:
    """operator-sdk's Go ``ansible-operator run`` (v1.31), with its own Python venv.

    Roles find ``operator_sdk.util`` as this repository's compatible collection
    (Ansible Galaxy is not reachable here); it runs the same module code as ours.
    ``/tmp/ansible-operator`` is bind-mounted from the work dir in a private mount
    namespace when ``unshare`` allows it, so its artifacts never mix with another
    process's.
    """

    name = "ansible-operator"

    def __init__(self, *, workdir: Path, kubeconfig: Path, namespace: str, watches: str) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "watches.yaml").write_text(watches)
        self.metrics_port = ports.free_port()
        self.health_port = ports.free_port()
        venv_bin = ANSIBLE_OPERATOR_VENV / "bin"
        collections = workloads.ROOT / "runner" / "collection"
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "WATCH_NAMESPACE": namespace,
            "ANSIBLE_GATHERING": "explicit",
            "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(ANSIBLE_OPERATOR_VENV),
            "ANSIBLE_COLLECTIONS_PATH": f"{collections}:{collections / 'compat'}",
            "PLAYBOOK_OPERATOR_LIB": str(workloads.ROOT),
        }
        self.env.pop("PYTHONPATH", None)
        self.command = [
            str(ANSIBLE_OPERATOR),
            "run",
            "--watches-file=./watches.yaml",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--max-concurrent-reconciles=2",
        ]
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self._jobs: set[str] = set()

    @staticmethod
    def check() -> None:
        """Raise unless ansible-operator is built and its fixed ports are free."""
        if not ANSIBLE_OPERATOR.exists():
            raise SystemExit(f"{ANSIBLE_OPERATOR} is missing: run hack/ansible-operator/build.sh")
        busy = [port for port in ANSIBLE_OPERATOR_PORTS if ports.port_in_use(port)]
        if busy:
            raise SystemExit(
                f"ports {busy} are in use: ansible-operator hard-codes them; "
                "stop whatever holds them (another ansible-operator?) and run again"
            )

    def _wrapped(self) -> list[str]:
        unshare = shutil.which("unshare")
        if unshare is None or os.geteuid() != 0:
            return self.command
        private = self.workdir / "tmp-ansible-operator"
        private.mkdir(exist_ok=True)
        script = (
            f"mkdir -p {ANSIBLE_OPERATOR_ARTIFACTS} && "
            f'mount --bind {private} {ANSIBLE_OPERATOR_ARTIFACTS} && exec "$@"'
        )
        probe = subprocess.run(
            [unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh", "true"],
            capture_output=True,
            check=False,
        )
        if probe.returncode != 0:
            return self.command
        return [
            unshare,
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            *self.command,
        ]

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def start(self) -> AnsibleOperator:
        self.check()
        log = (self.workdir / "ansible-operator.log").open("ab")
        self._proc = subprocess.Popen(
            self._wrapped(), cwd=self.workdir, env=self.env, stdout=log, stderr=log
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"ansible-operator exited: {self.tail()}")
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.health_port}/readyz", timeout=2
                ) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"ansible-operator not ready: {self.tail()}")

    def tail(self, count: int = 20) -> str:
        lines = (self.workdir / "ansible-operator.log").read_text(errors="replace").splitlines()
        return "\n".join(lines[-count:])

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def runs(self) -> int:
        """Finished Ansible runs, from its log: each ends with "Ansible-runner exited
        successfully" or an error logged for its job. (ansible_operator_reconcile_result
        misses runs: a run whose role asked for requeue_after never reaches markDone.)"""
        with (self.workdir / "ansible-operator.log").open("rb") as log:
            log.seek(self._log_offset)
            chunk = log.read()
        complete = chunk.rfind(b"\n") + 1
        self._log_offset += complete
        for line in chunk[:complete].splitlines():
            if b'"logger":"runner"' not in line or b'"job"' not in line:
                continue
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                ended = entry.get("msg") == "Ansible-runner exited successfully" or (
                    entry.get("level") == "error" and entry.get("msg") not in _NOT_RUN_ENDS
                )
                if ended:
                    self._jobs.add(str(entry["job"]))
        return len(self._jobs)

    def rss(self) -> int:
        """The Go process itself."""
        return accounting.rss_bytes([self.pid])
