"""One embedded control plane: start it, find it again, restart its apiserver, stop it.

This is the library API behind the CLI and the pytest fixtures. A :class:`Cluster` is
a handle on a data dir (see ``layout``); every fact about the running processes lives
on disk there, so ``devcluster up`` in one shell and ``Cluster().stop()`` in another
process manage the same cluster.
"""

from __future__ import annotations

import fcntl
import functools
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from devcluster import (
    api,
    binaries,
    certs,
    components,
    errors,
    health,
    kubeconfig,
    layout,
    node,
    nodeconfig,
    pins,
    polling,
    ports,
    processes,
)

Printer = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def default_data_dir() -> Path:
    """``.cluster/`` in the source checkout; in the current directory without one."""
    root = pins.checkout()
    return (root if root is not None else Path.cwd()) / ".cluster"


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
    except OSError:
        return "(no log)"


class Cluster:
    """A handle on the control plane whose files live in ``data_dir``."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        bin_dir: Path | None = None,
        prefer_default_ports: bool = True,
        out: Printer = _quiet,
    ) -> None:
        self.data_dir = (data_dir or default_data_dir()).resolve()
        self.layout = layout.Layout(self.data_dir)
        self.bin_dir = bin_dir
        self._prefer_default_ports = prefer_default_ports
        self._out = out

    # -- facts about a started cluster -------------------------------------

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (``<data dir>/kubeconfig``); exists once the cluster is ready."""
        return self.layout.kubeconfig

    def _state(self) -> layout.State:
        state = self.layout.read_state()
        if state is None:
            raise errors.DevClusterError(f"no cluster state in {self.data_dir}; start it first")
        return state

    @property
    def server(self) -> str:
        return self._state().server

    @property
    def admin_token(self) -> str:
        """A bearer token for user ``admin`` in ``system:masters`` (from ``--token-auth-file``)."""
        return self._state().admin_token

    @property
    def ca_file(self) -> Path:
        return self.layout.pki.ca_cert

    def admin_api(self) -> api.Api:
        """A minimal client acting as admin (the dev cluster's own calls; tests use runner's)."""
        return api.Api(server=self.server, ca_file=self.ca_file, token=self.admin_token)

    def _admin_api_if_started(self) -> api.Api | None:
        return self.admin_api() if self.layout.read_state() else None

    def status(self) -> health.Report:
        return health.collect(where=self.layout, client=self._admin_api_if_started())

    def is_running(self) -> bool:
        """Every component's process is alive and /readyz answers ok."""
        if self.layout.read_state() is None:
            return False
        for name in components.ORDER:
            handle = processes.read(self.layout.pid_file(name))
            if handle is None or not processes.alive(handle):
                return False
        return self.admin_api().readyz()[0]

    # -- lifecycle ----------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # Serialises `up`/`down` on one data dir across processes (two shells, pytest).
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.layout.lock_file.open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def start(self, *, timeout: float = 60.0) -> float:
        """Start the cluster unless it already runs; return the seconds it took (0 if running)."""
        with self._locked():
            if self.is_running():
                self._out(f"cluster in {self.data_dir} is already running at {self.server}")
                return 0.0
            started = time.monotonic()
            leftovers = self._live_components()
            if leftovers:
                self._out(f"cluster in {self.data_dir} is unhealthy; replacing it afresh")
            self._stop_all(timeout=10.0)  # whatever is left of a half-dead cluster
            self._purge()
            try:
                self._bring_up(deadline=started + timeout)
            except BaseException:
                # Leave no half-started cluster behind; the logs stay for the post-mortem.
                self._stop_all(timeout=5.0)
                self._purge()
                raise
            elapsed = time.monotonic() - started
            self._out(f"cluster ready at {self.server} in {elapsed:.1f}s")
            return elapsed

    def _bring_up(self, *, deadline: float) -> None:
        state = self._prepare()
        # kube-apiserver retries etcd on its own, so both start at once.
        for name in (binaries.ETCD, binaries.APISERVER):
            self._spawn(name, state)
        self._wait(deadline, "/readyz to answer ok", lambda: self.admin_api().readyz()[0])
        # These exit if the apiserver is unreachable at start-up, hence only now.
        for name in (binaries.CONTROLLER_MANAGER, binaries.SCHEDULER, binaries.KWOK):
            self._spawn(name, state)
        self._create_node()
        client = self.admin_api()
        self._wait(deadline, "the fake node to be Ready", lambda: bool(health.node_ready(client)))
        for name, port in (
            (binaries.CONTROLLER_MANAGER, state.ports.controller_manager),
            (binaries.SCHEDULER, state.ports.scheduler),
        ):
            self._wait(deadline, f"{name} /healthz", functools.partial(api.healthz, port))
        # Written last: its existence (with /readyz) is how other tools detect the cluster.
        shutil.copyfile(self.layout.components_kubeconfig, self.kubeconfig)
        self.kubeconfig.chmod(0o600)

    def _prepare(self) -> layout.State:
        bins = {name: binaries.resolve(name, bin_dir=self.bin_dir) for name in components.ORDER}
        stages = binaries.stages_file(bin_dir=self.bin_dir)
        if not stages.is_file():
            raise errors.BinaryNotFoundError(
                f"kwok stages: expected {stages}; run `devcluster build`"
            )
        where = self.layout
        certs.generate(where.pki)
        certs.ensure_kubelet_certs(
            where.pki, kwok=components.KWOK_SERVER, node=nodeconfig.KUBELET_SERVER
        )
        token = secrets.token_hex(24)
        where.tokens_file.write_text(f'{token},admin,admin,"system:masters"\n')
        where.tokens_file.chmod(0o600)
        chosen = ports.choose(prefer_defaults=self._prefer_default_ports)
        kubeconfig.write(
            where.components_kubeconfig,
            kubeconfig.render(
                server=f"https://127.0.0.1:{chosen.apiserver}",
                ca_pem=where.pki.ca_cert.read_bytes(),
                user="admin",
                cert_pem=where.pki.admin_cert.read_bytes(),
                key_pem=where.pki.admin_key.read_bytes(),
            ),
        )
        commands = {
            binaries.ETCD: components.etcd(binary=bins[binaries.ETCD], where=where, ports=chosen),
            binaries.APISERVER: components.apiserver(
                binary=bins[binaries.APISERVER], where=where, ports=chosen
            ),
            binaries.CONTROLLER_MANAGER: components.controller_manager(
                binary=bins[binaries.CONTROLLER_MANAGER], where=where, ports=chosen
            ),
            binaries.SCHEDULER: components.scheduler(
                binary=bins[binaries.SCHEDULER], where=where, ports=chosen
            ),
            binaries.KWOK: components.kwok(
                binary=bins[binaries.KWOK], where=where, stages=stages, ports=chosen
            ),
        }
        where.kwok_dir.mkdir(parents=True, exist_ok=True)
        (where.kwok_dir / "exec").mkdir(exist_ok=True)
        (where.kwok_dir / "debugging.yaml").write_text(components.kwok_debugging(where))
        (where.kwok_dir / "container.log").write_text(components.simulated_log())
        state = layout.State(ports=chosen, admin_token=token, commands=commands)
        where.write_state(state)
        return state

    def _spawn(self, name: str, state: layout.State, *, append: bool = False) -> None:
        processes.spawn(
            argv=state.commands[name],
            log_file=self.layout.log_file(name),
            pid_file=self.layout.pid_file(name),
            append=append,
        )

    def _live_components(self) -> list[str]:
        handles = {name: processes.read(self.layout.pid_file(name)) for name in components.ORDER}
        return [name for name, h in handles.items() if h is not None and processes.alive(h)]

    def _dead_component(self) -> str | None:
        for name in components.ORDER:
            handle = processes.read(self.layout.pid_file(name))
            if handle is not None and not processes.alive(handle):
                return name
        return None

    def _wait(self, deadline: float, what: str, predicate: Callable[[], bool]) -> None:
        """Wait for ``predicate``, failing fast (with its log) if a component exits."""
        dead: list[str] = []

        def done() -> bool:
            name = self._dead_component()
            if name is not None:
                dead.append(name)
                return True
            return predicate()

        ok = polling.wait_until(done, timeout=max(0.0, deadline - time.monotonic()), interval=0.1)
        if dead:
            log = self.layout.log_file(dead[0])
            raise errors.StartError(
                f"{dead[0]} exited while waiting for {what}; last lines of {log}:\n{_tail(log)}"
            )
        if not ok:
            raise errors.StartError(
                f"timed out waiting for {what}; logs are in {self.layout.log_file('').parent}"
            )

    def _create_node(self) -> None:
        try:
            node = components.fake_node(kubelet_port=self._state().ports.kubelet)
            self.admin_api().call("POST", "/api/v1/nodes", body=node)
        except errors.ApiError as exc:
            if exc.status != 409:  # already there: `up` after a crash with etcd data kept
                raise

    def stop(self, *, timeout: float = 10.0, purge: bool = True) -> None:
        """Stop every component (SIGTERM, SIGKILL after ``timeout``); ``purge`` drops its data."""
        with self._locked():
            self._stop_all(timeout=timeout)
            if purge:
                self._purge()

    def _stop_all(self, *, timeout: float) -> None:
        node.stop(where=self.layout, out=self._out)  # the real node, if any, goes first
        for name in reversed(components.ORDER):
            self.stop_component(name, timeout=timeout)

    def _purge(self) -> None:
        for path in self.layout.transient():
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()

    def stop_component(self, name: str, *, timeout: float = 10.0) -> None:
        """Stop one component (e.g. kube-apiserver, to test clients across a restart)."""
        pid_file = self.layout.pid_file(name)
        handle = processes.read(pid_file)
        if handle is not None:
            graceful = processes.stop(handle, timeout=timeout)
            self._out(f"stopped {name} (pid {handle.pid}{'' if graceful else ', killed'})")
        pid_file.unlink(missing_ok=True)

    def start_component(self, name: str, *, timeout: float = 30.0) -> None:
        """Start one stopped component again with the same flags and port."""
        handle = processes.read(self.layout.pid_file(name))
        if handle is not None and processes.alive(handle):
            return
        state = self._state()
        self._spawn(name, state, append=True)
        if name == binaries.APISERVER:
            deadline = time.monotonic() + timeout
            self._wait(deadline, "/readyz to answer ok", lambda: self.admin_api().readyz()[0])

    def restart_apiserver(self, *, timeout: float = 30.0) -> None:
        """Stop kube-apiserver and start it again on the same port; returns once ready."""
        self.stop_component(binaries.APISERVER)
        self.start_component(binaries.APISERVER, timeout=timeout)

    # -- the real node (opt-in) ------------------------------------------------

    def add_real_node(
        self,
        *,
        timeout: float = 120.0,
        mode: nodeconfig.Placement = nodeconfig.Placement.SHARED,
    ) -> float:
        """Add the real node (containerd, kubelet, kube-proxy) to this running cluster.

        Nothing of the control plane restarts. Returns the seconds taken (0 if it already
        runs); raises :class:`NodeUnavailableError` when this machine cannot run one.
        ``mode``: which pods it takes (:class:`~devcluster.nodeconfig.Placement`); a
        running node switches mode by its taints alone.
        """
        with self._locked():
            if not self.is_running():
                raise errors.StartError(
                    f"the cluster in {self.data_dir} is not running; start it before its real node"
                )
            return node.start(
                where=self.layout,
                client=self.admin_api(),
                bin_dir=self.bin_dir,
                timeout=timeout,
                mode=mode,
                out=self._out,
            )

    def remove_real_node(self) -> None:
        """Stop the real node and delete its Node object; the control plane keeps running."""
        with self._locked():
            client = self.admin_api() if self.is_running() else None
            node.stop(where=self.layout, client=client, out=self._out)

    def has_real_node(self) -> bool:
        return node.running(self.layout)

    # -- using it -------------------------------------------------------------

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster as admin; raise :class:`KubectlError` if ``check``."""
        binary = binaries.resolve(binaries.KUBECTL, bin_dir=self.bin_dir)
        command = [str(binary), f"--kubeconfig={self.layout.components_kubeconfig}", *args]
        done = subprocess.run(command, input=input, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise errors.KubectlError(
                args=list(args), returncode=done.returncode, stdout=done.stdout, stderr=done.stderr
            )
        return done
