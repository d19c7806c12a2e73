"""Where a cluster keeps its files inside its data dir, and the state recorded there.

::

    <data dir>/                 default .cluster/ in the checkout
    ├── kubeconfig              admin kubeconfig, written once /readyz answers (a contract)
    ├── state.json              ports, server URL, admin token, each component's argv
    ├── lock                    flock'd while starting or stopping
    ├── pki/                    CA, serving and admin certs, SA key, tokens.csv
    ├── etcd/                   etcd's data (deleted by `down`)
    ├── kwok/                   kwok's exec/logs config, the simulated container log
    ├── run/<component>.pid     "<pid> <start time>" of every running process
    ├── logs/<component>.log    stdout+stderr of each component (kept after `down`)
    ├── kube-controller-manager/, kube-scheduler/   their self-signed serving certs
    ├── accounts/               kubeconfigs minted for service accounts
    └── node/                   the real node, if any (``up --node real``; see nodeconfig)

Other clusters (pytest's own, throwaway test clusters) use their own data dirs, so
several can run side by side.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from devcluster import certs


@dataclass(frozen=True)
class Ports:
    """Loopback ports chosen at start (see ``ports``) and recorded in ``state.json``."""

    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    #: kwok's kubelet server (exec, attach, logs); 0 in the state of a cluster started
    #: before kwok served it
    kubelet: int = 0


@dataclass(frozen=True)
class State:
    """What a running cluster needs to be found and managed again by another process."""

    ports: Ports
    admin_token: str
    #: component name → the argv it was started with (so it can be restarted alone)
    commands: dict[str, list[str]] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"


@dataclass(frozen=True)
class Layout:
    data_dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def components_kubeconfig(self) -> Path:
        # Components start before the contract kubeconfig is written (it only appears
        # once the cluster is ready), so they get their own copy.
        return self.pki.directory / "admin.kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.data_dir / "state.json"

    @property
    def lock_file(self) -> Path:
        return self.data_dir / "lock"

    @property
    def pki(self) -> certs.Pki:
        return certs.Pki(self.data_dir / "pki")

    @property
    def tokens_file(self) -> Path:
        return self.pki.directory / "tokens.csv"

    @property
    def etcd_dir(self) -> Path:
        return self.data_dir / "etcd"

    @property
    def accounts_dir(self) -> Path:
        return self.data_dir / "accounts"

    @property
    def kwok_dir(self) -> Path:
        """kwok's exec/logs configuration, the simulated container log and exec's work dir."""
        return self.data_dir / "kwok"

    def pid_file(self, component: str) -> Path:
        return self.data_dir / "run" / f"{component}.pid"

    def log_file(self, component: str) -> Path:
        return self.data_dir / "logs" / f"{component}.log"

    def cert_dir(self, component: str) -> Path:
        return self.data_dir / component

    def transient(self) -> list[Path]:
        """Everything `down` deletes: a later `up` starts a fresh, empty cluster."""
        return [
            self.kubeconfig,
            self.state_file,
            self.pki.directory,
            self.etcd_dir,
            self.data_dir / "run",
            self.accounts_dir,
            self.kwok_dir,
            self.cert_dir("kube-controller-manager"),
            self.cert_dir("kube-scheduler"),
            # Not node/: node.stop removes it, once nothing is mounted below it.
        ]

    def read_state(self) -> State | None:
        try:
            raw = json.loads(self.state_file.read_text())
            return State(
                ports=Ports(**raw["ports"]),
                admin_token=str(raw["admin_token"]),
                commands={str(k): [str(a) for a in v] for k, v in raw["commands"].items()},
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write_state(self, state: State) -> None:
        self.state_file.write_text(json.dumps(asdict(state), indent=2) + "\n")
