"""Building the control-plane binaries from the Go module proxy, once per pin.

There is no Docker and no release download here: every binary is compiled from
modules. ``k8s`` is one multicall binary (kube-apiserver, kube-controller-manager,
kube-scheduler and kubectl are symlinks to it) so the huge shared dependency set is
compiled and linked once; ``etcd`` comes from the wrapper module in
``hack/cluster/etcd``; kwok is ``go install``ed; and kwok's Stage objects are copied
out of kwok's module into ``kwok-stages.yaml``, because kwok refuses to run without
them. The real node's binaries (``devcluster up --node real``) are built only when asked
for (``node=True``): ``k8s-node``, a second multicall binary (kubelet and kube-proxy are
symlinks to it), from ``hack/cluster/node``, and the static ``pause`` program the pause
image holds, from ``hack/cluster/pause``. A stamp file records the pin each output was
built from, so a second run only rebuilds what a pin change (or a missing file) made stale.

go's own output (a cold build prints hundreds of "go: downloading" lines) is not shown:
:class:`~devcluster.progress.GoProgress` reports what is built and how far along it is
every few seconds, and go's errors are shown when a step fails.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devcluster import binaries, errors, pins, progress

STAMP = ".stamp.json"
K8S_LINKS = (
    binaries.APISERVER,
    binaries.CONTROLLER_MANAGER,
    binaries.SCHEDULER,
    binaries.KUBECTL,
)
NODE_LINKS = (binaries.KUBELET, binaries.KUBE_PROXY)
#: The default stages kwokctl installs for "fast" clusters, in kwok's module layout.
KWOK_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)

#: Bump when the way a target is built changes (flags, steps), so stamps go stale.
RECIPE = 2

Printer = Callable[[str], None]


@dataclass(frozen=True)
class Target:
    """One build step: what it writes, which binaries it provides, and its pin key."""

    name: str
    outputs: tuple[str, ...]
    provides: tuple[str, ...]
    key: str


@dataclass(frozen=True)
class Step:
    """What happened to one target: ``built`` False means it was already up to date."""

    target: str
    built: bool
    seconds: float


def targets(p: pins.Pins, *, node: bool = False) -> tuple[Target, ...]:
    """The control plane's targets; with ``node``, the real node's too."""
    control_plane = (
        Target("k8s", ("k8s", *K8S_LINKS), K8S_LINKS, f"{p.kubernetes}+{p.k8s_sources}+r{RECIPE}"),
        Target("etcd", (binaries.ETCD,), (binaries.ETCD,), f"{p.etcd}+{p.etcd_sources}"),
        Target("kwok", (binaries.KWOK,), (binaries.KWOK,), p.kwok),
        Target("stages", (binaries.STAGES_FILE,), (), p.kwok),
    )
    if not node:
        return control_plane
    return (
        *control_plane,
        Target(
            "node",
            ("k8s-node", *NODE_LINKS),
            NODE_LINKS,
            f"{p.kubernetes}+{p.node_sources}+r{RECIPE}",
        ),
        Target("pause", (binaries.PAUSE,), (), f"{p.pause_sources}+r{RECIPE}"),
    )


_duration = progress.duration


def _size(size: int) -> str:
    return f"{size / 2**20:.0f} MiB" if size >= 2**20 else f"{size / 1024:.0f} KiB"


def _go(
    args: list[str],
    *,
    cwd: Path,
    watch: progress.GoProgress,
    env: dict[str, str] | None = None,
    compiling: bool = False,
) -> str:
    """Run ``go`` and return its stdout; its stderr feeds ``watch`` (progress, errors)."""
    command = ["go", *args]
    # A developer's go.work must not pull other modules into these pinned builds.
    full_env = {**os.environ, "GOWORK": "off", **(env or {})}
    try:
        child = subprocess.Popen(
            command,
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except FileNotFoundError as exc:
        raise errors.BuildError("`go` is not on PATH; Go 1.26 is needed to build") from exc
    out_pipe, err_pipe = child.stdout, child.stderr
    assert out_pipe is not None and err_pipe is not None
    stdout: list[str] = []
    # stdout (JSON, package lists) is read beside stderr so that neither pipe fills up.
    reader = threading.Thread(target=lambda: stdout.append(out_pipe.read()), daemon=True)
    reader.start()
    for line in err_pipe:
        watch.line(line, compiling=compiling)
    code = child.wait()
    reader.join()
    if code != 0:
        raise errors.BuildError(
            f"`{' '.join(command)}` in {cwd} exited {code}:\n{watch.output() or '(no output)'}"
        )
    return "".join(stdout)


def _compile(args: list[str], *, cwd: Path, watch: progress.GoProgress) -> None:
    """``go build -v`` of ``.`` in ``cwd``, counting its packages against ``go list -deps``."""
    listed = _go(["list", "-deps", "."], cwd=cwd, watch=watch)
    watch.start("compiling", total=len(listed.split()))
    _go(["build", "-v", *args], cwd=cwd, watch=watch, compiling=True)


def _module_info(
    module: str, version: str, *, cwd: Path, watch: progress.GoProgress
) -> dict[str, str]:
    info: dict[str, str] = json.loads(
        _go(["mod", "download", "-json", f"{module}@{version}"], cwd=cwd, watch=watch)
    )
    return info


def _k8s_ldflags(p: pins.Pins, *, cwd: Path, watch: progress.GoProgress) -> str:
    # Without these the binaries report v0.0.0-master, and clients that gate on the
    # server version misbehave. The release time from the proxy's .info file keeps the
    # build date reproducible.
    info_file = _module_info("k8s.io/kubernetes", p.kubernetes, cwd=cwd, watch=watch)["Info"]
    released = json.loads(Path(info_file).read_text()).get("Time", "1970-01-01T00:00:00Z")
    base = "k8s.io/component-base/version"
    return " ".join(
        [
            "-s -w",
            f"-X {base}.gitVersion={p.kubernetes}",
            f"-X {base}.gitMajor={p.kubernetes_major}",
            f"-X {base}.gitMinor={p.kubernetes_minor}",
            # The proxy does not record the commit; empty beats the "$Format:%H$" default.
            f"-X {base}.gitCommit=",
            f"-X {base}.gitTreeState=clean",
            f"-X {base}.buildDate={released}",
        ]
    )


def _build_k8s(p: pins.Pins, bin_dir: Path, watch: progress.GoProgress) -> None:
    source = pins.module_dir("k8s")
    tmp = bin_dir / "k8s.tmp"
    flags = _k8s_ldflags(p, cwd=source, watch=watch)
    _compile(["-trimpath", "-ldflags", flags, "-o", str(tmp), "."], cwd=source, watch=watch)
    # Rename over the old file so a running apiserver keeps its (old) inode.
    tmp.replace(bin_dir / "k8s")
    for link in K8S_LINKS:
        path = bin_dir / link
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to("k8s")


def _build_node(p: pins.Pins, bin_dir: Path, watch: progress.GoProgress) -> None:
    source = pins.module_dir("node")
    tmp = bin_dir / "k8s-node.tmp"
    flags = _k8s_ldflags(p, cwd=source, watch=watch)
    _compile(["-trimpath", "-ldflags", flags, "-o", str(tmp), "."], cwd=source, watch=watch)
    tmp.replace(bin_dir / "k8s-node")
    for link in NODE_LINKS:
        path = bin_dir / link
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to("k8s-node")


def _build_pause(p: pins.Pins, bin_dir: Path, watch: progress.GoProgress) -> None:
    source = pins.module_dir("pause")
    tmp = bin_dir / "pause.tmp"
    # Static: the pause image holds this one file and no libc.
    _go(
        ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp), "."],
        cwd=source,
        watch=watch,
        env={"CGO_ENABLED": "0"},
    )
    tmp.replace(bin_dir / binaries.PAUSE)


def _build_etcd(p: pins.Pins, bin_dir: Path, watch: progress.GoProgress) -> None:
    source = pins.module_dir("etcd")
    tmp = bin_dir / "etcd.tmp"
    _compile(["-trimpath", "-ldflags", "-s -w", "-o", str(tmp), "."], cwd=source, watch=watch)
    tmp.replace(bin_dir / binaries.ETCD)


def _build_kwok(p: pins.Pins, bin_dir: Path, watch: progress.GoProgress) -> None:
    gobin = bin_dir / "kwok.gobin"
    gobin.mkdir(exist_ok=True)
    # kwok reads its own version from the module's build info, so no -X is needed.
    # `go install module@version` has no module to `go list` in: no total, only a count.
    watch.start("compiling")
    _go(
        [
            "install",
            "-v",
            "-trimpath",
            "-ldflags",
            "-s -w",
            f"{pins.KWOK_MODULE}/cmd/kwok@{p.kwok}",
        ],
        cwd=bin_dir,
        env={"GOBIN": str(gobin)},
        watch=watch,
        compiling=True,
    )
    (gobin / "kwok").replace(bin_dir / binaries.KWOK)
    gobin.rmdir()


def _build_stages(p: pins.Pins, bin_dir: Path, watch: progress.GoProgress) -> None:
    module = Path(_module_info(pins.KWOK_MODULE, p.kwok, cwd=bin_dir, watch=watch)["Dir"])
    parts = [f"# Generated by `devcluster build` from {pins.KWOK_MODULE}@{p.kwok}; do not edit.\n"]
    for relative in KWOK_STAGES:
        parts.append(f"---\n# {relative}\n" + (module / relative).read_text())
    (bin_dir / binaries.STAGES_FILE).write_text("".join(parts))


BUILDERS: dict[str, Callable[[pins.Pins, Path, progress.GoProgress], None]] = {
    "k8s": _build_k8s,
    "etcd": _build_etcd,
    "kwok": _build_kwok,
    "stages": _build_stages,
    "node": _build_node,
    "pause": _build_pause,
}


@contextmanager
def _locked(bin_dir: Path) -> Iterator[None]:
    # Two pytest sessions (or `make` targets) may build at once; one waits for the other.
    bin_dir.mkdir(parents=True, exist_ok=True)
    with (bin_dir / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _read_stamp(bin_dir: Path) -> dict[str, str]:
    try:
        stamp: dict[str, str] = json.loads((bin_dir / STAMP).read_text())
    except (OSError, ValueError):
        return {}
    return stamp


def _stale(target: Target, *, bin_dir: Path, stamp: dict[str, str]) -> bool:
    missing = [o for o in target.outputs if not (bin_dir / o).exists()]
    return bool(missing) or stamp.get(target.name) != target.key


def build(
    *,
    bin_dir: Path | None = None,
    force: bool = False,
    skip_overridden: bool = False,
    node: bool = False,
    out: Printer = print,
) -> list[Step]:
    """Build every stale target into ``bin_dir`` (default ``bin/k8s/<pin>``); with ``node``,
    the real node's binaries too.

    ``skip_overridden`` leaves out targets whose binaries the environment already
    supplies (``TEST_ASSET_*`` / ``$KUBEBUILDER_ASSETS``), so a machine with envtest's
    assets and no Go toolchain can still run whatever it has.
    """
    p = pins.load()
    directory = bin_dir or binaries.default_bin_dir()
    steps: list[Step] = []
    with _locked(directory):
        stamp = _read_stamp(directory)
        all_targets = targets(p, node=node)
        for index, target in enumerate(all_targets, start=1):
            if skip_overridden and _overridden(target):
                continue
            if not force and not _stale(target, bin_dir=directory, stamp=stamp):
                steps.append(Step(target.name, built=False, seconds=0.0))
                continue
            number = f"{index}/{len(all_targets)}"
            out(
                f"building {target.name} ({number}: {', '.join(target.outputs)}) at "
                f"{target.key} ..."
            )
            started = time.monotonic()
            BUILDERS[target.name](p, directory, progress.GoProgress(target=target.name, out=out))
            elapsed = time.monotonic() - started
            stamp[target.name] = target.key
            (directory / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
            size = (directory / target.outputs[0]).stat().st_size
            out(f"built {target.name} in {_duration(elapsed)} ({_size(size)})")
            steps.append(Step(target.name, built=True, seconds=elapsed))
    return steps


def _overridden(target: Target) -> bool:
    if target.name == "stages":
        return bool(os.environ.get("TEST_ASSET_KWOK_STAGES"))
    if not target.provides:  # pause: never supplied by the environment
        return False
    return all(binaries.override(name) is not None for name in target.provides)


def summary(steps: list[Step], *, bin_dir: Path | None = None) -> str:
    built = [s for s in steps if s.built]
    where = bin_dir or binaries.default_bin_dir()
    if not built:
        return f"binaries in {where} are up to date"
    total = sum(s.seconds for s in built)
    return f"built {', '.join(s.target for s in built)} into {where} in {_duration(total)}"
