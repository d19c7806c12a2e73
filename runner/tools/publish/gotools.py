"""The Go tools ``make bundle``, ``make scorecard`` and ``make catalog`` run, built once
from the Go module proxy into ``bin/`` at pinned versions (:data:`TOOLS`, the one place
they are named).

Outside the runtime flow (watch → queue → reconcile → ansible → status). No release
download is used: each tool is its module's source, fetched with ``go mod download``
(the module proxy, or the module cache when offline) and built here:

- operator-sdk v1.34.1 (``bundle validate``, ``generate bundle``): it needs
  golang.org/x/tools raised to v0.34.0 to compile with a current Go; its version is set
  with ``-ldflags -X``. Newer operator-sdk releases are not served by the proxy.
- scorecard-test (the same module's ``images/scorecard-test``), static: the binary the
  scorecard's pods run, run here against the bundle (:mod:`~runner.tools.publish.scorecard`).
- opm v1.73.0 (operator-registry), with the build tags its release uses.
- kustomize v5.5.0, with ``go install``.

A module with ``replace`` lines cannot be ``go install``-ed, so those are built in a
writable copy of the module. A built tool is ``bin/<name>-<version>`` with ``bin/<name>``
linking to it: a changed pin builds again, an unchanged one never does. Cold, on 2 cores:
about 3 minutes for operator-sdk, 2 for opm, 1 for kustomize.

``python -m runner.tools.publish.gotools NAME [--bin-dir bin]`` builds one and prints
its path (the Makefiles' tool targets); ``playbook-operator tool NAME`` is the same.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.tools.publish.errors import ToolError

Printer = Callable[[str], None]


@dataclass(frozen=True)
class Tool:
    """How one tool is built: ``package`` within ``module`` at ``version``."""

    module: str
    version: str
    package: str
    # `go get` lines run in the module's copy before building (raised dependencies).
    upgrades: tuple[str, ...] = ()
    tags: str = ""
    ldflags: str = ""
    static: bool = False
    install: bool = False  # no replace lines: `go install module/package@version`
    env: dict[str, str] = field(default_factory=dict, hash=False)


_SDK = "github.com/operator-framework/operator-sdk"
_SDK_VERSION = "v1.34.1"
TOOLS: dict[str, Tool] = {
    "operator-sdk": Tool(
        module=_SDK,
        version=_SDK_VERSION,
        package="./cmd/operator-sdk",
        upgrades=("golang.org/x/tools@v0.34.0",),
        # What `operator-sdk version` prints and the bundle's builder annotation names.
        ldflags=" ".join(
            f"-X {_SDK}/internal/version.{name}={value}"
            for name, value in (
                ("Version", _SDK_VERSION),
                ("GitVersion", _SDK_VERSION),
                ("ImageVersion", _SDK_VERSION),
                ("KubernetesVersion", "v1.28.0"),
            )
        ),
    ),
    "scorecard-test": Tool(
        module=_SDK,
        version=_SDK_VERSION,
        package="./images/scorecard-test",
        upgrades=("golang.org/x/tools@v0.34.0",),
        static=True,
    ),
    "opm": Tool(
        module="github.com/operator-framework/operator-registry",
        version="v1.73.0",
        package="./cmd/opm",
        tags="json1,containers_image_openpgp",
    ),
    "kustomize": Tool(
        module="sigs.k8s.io/kustomize/kustomize/v5",
        version="v5.5.0",
        package="",
        install=True,
    ),
}


def _go(args: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    go = shutil.which("go")
    if go is None:
        raise ToolError("no `go` on PATH: the Go tools are built from the Go module proxy")
    done = subprocess.run(
        [go, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ToolError(f"go {' '.join(args)} failed:\n{done.stderr.strip()[-3000:]}")
    return done.stdout


def _build(tool: Tool, *, target: Path) -> None:
    env = {**os.environ, **tool.env, "GOFLAGS": "-buildvcs=false"}
    if tool.static:
        env["CGO_ENABLED"] = "0"
    flags = ["-trimpath", *(["-tags", tool.tags] if tool.tags else [])]
    flags += ["-ldflags", tool.ldflags] if tool.ldflags else []
    if tool.install:
        with tempfile.TemporaryDirectory() as gobin:
            _go(["install", *flags, f"{tool.module}@{tool.version}"], env={**env, "GOBIN": gobin})
            shutil.move(str(Path(gobin) / Path(tool.module.removesuffix("/v5")).name), target)
        return
    info = json.loads(_go(["mod", "download", "-json", f"{tool.module}@{tool.version}"], env=env))
    with tempfile.TemporaryDirectory() as work:
        copy = Path(work) / "module"
        shutil.copytree(info["Dir"], copy)
        for path in [copy, *copy.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # the module cache is read-only
        for upgrade in tool.upgrades:
            _go(["get", upgrade], cwd=copy, env=env)
        _go(["build", *flags, "-o", str(target), tool.package], cwd=copy, env=env)


def ensure(name: str, *, bin_dir: Path, out: Printer) -> Path:
    """``bin_dir/name``, built at its pinned version unless it is there already."""
    tool = TOOLS.get(name)
    if tool is None:
        raise ToolError(f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}")
    bin_dir = bin_dir.absolute()  # `go build` runs in the module's copy
    bin_dir.mkdir(parents=True, exist_ok=True)
    versioned = bin_dir / f"{name}-{tool.version}"
    if not versioned.exists():
        out(f"building {name} {tool.version} from the Go module proxy into {versioned}")
        started = time.monotonic()
        # Builds in parallel (test workers) each write their own file; the rename is atomic.
        partial = versioned.with_name(f"{versioned.name}.partial-{os.getpid()}")
        _build(tool, target=partial)
        partial.replace(versioned)
        out(f"built {name} {tool.version} in {time.monotonic() - started:.0f}s")
    link = bin_dir / name
    if link.is_symlink() or link.exists():
        if link.is_symlink() and os.readlink(link) == versioned.name:
            return link
        link.unlink()
    link.symlink_to(versioned.name)
    return link


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.tools.publish.gotools")
    parser.add_argument("names", nargs="+", choices=sorted(TOOLS))
    parser.add_argument("--bin-dir", default="bin")
    args = parser.parse_args(argv)
    try:
        for name in args.names:
            print(ensure(name, bin_dir=Path(args.bin_dir), out=lambda m: print(m, file=sys.stderr)))
    except ToolError as exc:
        print(f"gotools: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
