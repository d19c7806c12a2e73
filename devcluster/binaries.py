"""Where each control-plane binary is found: envtest's lookup rules, then our own build.

Bring-your-own binaries follow controller-runtime's envtest convention
(``pkg/internal/testing/process/bin_path_finder.go``): ``TEST_ASSET_<NAME>`` first,
then ``$KUBEBUILDER_ASSETS/<name>``, and last the directory ``devcluster build``
fills, ``bin/k8s/<kubernetes pin>/``. envtest's tarball holds only kube-apiserver,
etcd and kubectl, so the other components fall through to our build.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from devcluster import errors, pins

APISERVER = "kube-apiserver"
CONTROLLER_MANAGER = "kube-controller-manager"
SCHEDULER = "kube-scheduler"
KUBECTL = "kubectl"
ETCD = "etcd"
KWOK = "kwok"
#: The real node's components (``devcluster up --node real``), built only on demand.
KUBELET = "kubelet"
KUBE_PROXY = "kube-proxy"
#: The real node's sandbox program, packed into the pause image (not run on the host).
PAUSE = "pause"

#: Every binary the cluster runs or offers, in start order.
NAMES = (ETCD, APISERVER, CONTROLLER_MANAGER, SCHEDULER, KWOK, KUBECTL, KUBELET, KUBE_PROXY)

#: kwok's Stage objects, assembled at build time from kwok's module (kwok needs them).
STAGES_FILE = "kwok-stages.yaml"


def default_bin_dir() -> Path:
    return pins.repo_root() / "bin" / "k8s" / pins.load().kubernetes


def env_var(name: str) -> str:
    """``kube-apiserver`` → ``TEST_ASSET_KUBE_APISERVER``, as envtest spells it."""
    return "TEST_ASSET_" + name.upper().replace("-", "_")


def override(name: str, *, environ: Mapping[str, str] | None = None) -> Path | None:
    """The binary the environment supplies for ``name``, if any (ours is not looked at)."""
    env = os.environ if environ is None else environ
    explicit = env.get(env_var(name))
    if explicit:
        return Path(explicit)
    assets = env.get("KUBEBUILDER_ASSETS")
    if assets and (Path(assets) / name).is_file():
        return Path(assets) / name
    return None


def resolve(
    name: str, *, bin_dir: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The path to run for ``name``; raises :class:`BinaryNotFoundError` naming every candidate."""
    if name not in NAMES:
        raise errors.BinaryNotFoundError(f"unknown binary {name!r}; known: {', '.join(NAMES)}")
    chosen = override(name, environ=environ)
    if chosen is None:
        chosen = (bin_dir or default_bin_dir()) / name
    if not chosen.is_file() or not os.access(chosen, os.X_OK):
        raise errors.BinaryNotFoundError(
            f"{name}: expected an executable at {chosen}, found none "
            f"(looked at ${env_var(name)}, $KUBEBUILDER_ASSETS/{name}, then "
            f"{bin_dir or default_bin_dir()}; run `devcluster build`)"
        )
    return chosen


def stages_file(*, bin_dir: Path | None = None) -> Path:
    """kwok's stages: ``$TEST_ASSET_KWOK_STAGES`` if set, else the file ``builder`` writes."""
    explicit = os.environ.get("TEST_ASSET_KWOK_STAGES")
    return Path(explicit) if explicit else (bin_dir or default_bin_dir()) / STAGES_FILE
