"""Which versions the embedded control plane is built from, read from where they are pinned.

Kubernetes and etcd are pinned by the wrapper modules under ``hack/cluster/`` (their
``go.mod`` files are the single source of truth); kwok is installed straight from the
module proxy, so its pin lives here. ``builder`` compares these against the stamp it
wrote last time, and ``binaries`` names the bin directory after the Kubernetes pin.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from devcluster import errors

#: kwok is `go install`ed at this version (v0.8.0 is the newest whose go.mod fits Go 1.26).
KWOK_VERSION = "v0.8.0"
KWOK_MODULE = "sigs.k8s.io/kwok"


#: Names the source checkout to build from when the package is not installed from one.
SOURCE_ENV = "DEVCLUSTER_SOURCE"


def checkout() -> Path | None:
    """The source checkout the binaries are built from and kept in: ``$DEVCLUSTER_SOURCE``,
    else the one this package lives in (an editable install, as ``make venv`` makes);
    None when neither holds ``hack/cluster/`` (a wheel install carries no Go modules)."""
    explicit = os.environ.get(SOURCE_ENV)
    root = Path(explicit) if explicit else Path(__file__).resolve().parent.parent
    return root if (root / "hack" / "cluster").is_dir() else None


def repo_root() -> Path:
    """The checkout of :func:`checkout`; raises :class:`~devcluster.errors.BuildError` when
    there is none. Projects elsewhere (``playbook-operator init``) share its binaries."""
    root = checkout()
    if root is None:
        where = os.environ.get(SOURCE_ENV) or str(Path(__file__).resolve().parent.parent)
        raise errors.BuildError(
            f"no hack/cluster/ under {where}: the control plane is built from Playbook "
            "Operator's source checkout, which this installation does not come from; "
            f"install it from a checkout (pip install -e <checkout>), set ${SOURCE_ENV} "
            "to a checkout, or supply the binaries with $KUBEBUILDER_ASSETS / $TEST_ASSET_*"
        )
    return root


def module_dir(name: str) -> Path:
    """``hack/cluster/<name>``: the Go module for ``k8s``, ``etcd``, ``node`` or ``pause``."""
    return repo_root() / "hack" / "cluster" / name


@dataclass(frozen=True)
class Pins:
    """Pinned versions plus a digest of each wrapper module's sources.

    The digests make an edit to ``main.go`` or ``go.sum`` count as a pin change too.
    """

    kubernetes: str
    etcd: str
    kwok: str
    k8s_sources: str
    etcd_sources: str
    #: the real node's kubelet + kube-proxy multicall module, and its pause program
    node_sources: str = ""
    pause_sources: str = ""

    @property
    def kubernetes_major(self) -> str:
        return self.kubernetes.lstrip("v").split(".")[0]

    @property
    def kubernetes_minor(self) -> str:
        return self.kubernetes.lstrip("v").split(".")[1]


def _required_version(go_mod: Path, module: str) -> str:
    text = go_mod.read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod}: no requirement on {module}")
    return match.group(1)


def _digest(directory: Path) -> str:
    sha = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        path = directory / name
        sha.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    return sha.hexdigest()[:16]


def load() -> Pins:
    k8s, etcd = module_dir("k8s"), module_dir("etcd")
    return Pins(
        kubernetes=_required_version(k8s / "go.mod", "k8s.io/kubernetes"),
        etcd=_required_version(etcd / "go.mod", "go.etcd.io/etcd/server/v3"),
        kwok=KWOK_VERSION,
        k8s_sources=_digest(k8s),
        etcd_sources=_digest(etcd),
        node_sources=_digest(module_dir("node")),
        pause_sources=_digest(module_dir("pause")),
    )
