"""Running one AnsiballZ payload in a child of the module launcher, as ``python`` would.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.zygote` in its children.
A payload carries its own copy of the ``ansible`` packages it needs in a zip
that it puts first on ``sys.path``. In the launcher, ``ansible`` and parts of
``ansible.module_utils`` are already imported from the same installation, so
imports under them would no longer look in the zip: a module from a role's
``library/`` (``ansible.legacy.<name>``) or a role's own ``module_utils`` would
not be found. :class:`PayloadFinder` looks in the payload's zip first for
``ansible.*`` names that are not imported yet, as a cold interpreter does.

What is already imported must be what the zip holds: the launcher records the
CRC-32 of every pre-imported ``ansible`` source file, and a payload whose zip
differs (a role shadowing a built-in module_util, another ansible-core; package
``__init__`` files excepted: payloads carry stubs of those) is not run warm:
the child execs the real interpreter on the same payload.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import runpy
import shutil
import sys
import types
import zipfile
import zipimport
import zlib
from collections.abc import Callable, Sequence


def ansible_sources() -> dict[str, int]:
    """``{"ansible/module_utils/basic.py": crc32, …}`` for the imported ``ansible`` modules."""
    found: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        if name != "ansible" and not name.startswith("ansible."):
            continue
        path = getattr(module, "__file__", None)
        # Package __init__ files in a payload are stubs Ansible writes, never a role's.
        if not path or not path.endswith(".py") or path.endswith("__init__.py"):
            continue
        relative = "/".join(name.split(".")) + ".py"
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            found[relative] = zlib.crc32(handle.read())
    return found


class PayloadFinder(importlib.abc.MetaPathFinder):
    """Finds ``ansible.*`` modules in the payload's zip before anywhere else."""

    def __init__(self, sources: dict[str, int], *, mismatch: Callable[[str, str], None]) -> None:
        self._sources = sources
        self._mismatch = mismatch
        self._checked: set[str] = set()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "ansible" and not fullname.startswith("ansible."):
            return None
        parts = fullname.split(".")
        for entry in list(sys.path):
            if not entry.endswith(".zip") or not os.path.isfile(entry):
                continue
            if entry not in self._checked:
                self._checked.add(entry)
                self._check(entry)
            try:
                importer = zipimport.zipimporter(os.path.join(entry, *parts[:-1]))
                spec = importer.find_spec(fullname)
            except zipimport.ZipImportError:
                continue
            if spec is not None:
                return spec
        return None

    def _check(self, archive: str) -> None:
        try:
            with zipfile.ZipFile(archive) as payload:
                for info in payload.infolist():
                    expected = self._sources.get(info.filename)
                    if expected is not None and expected != info.CRC:
                        self._mismatch(archive, info.filename)
        except (OSError, zipfile.BadZipFile):
            return


def run_cold(python: str, args: list[str], *, source: bytes | None, archive: str) -> None:
    """Exec the real interpreter on the same payload (the zip's temp dir is removed first:
    the payload that made it would have, and it will make another)."""
    shutil.rmtree(os.path.dirname(archive), ignore_errors=True)
    if source is not None:
        memory = os.memfd_create("ansible-payload")
        os.write(memory, source)
        os.lseek(memory, 0, os.SEEK_SET)
        os.dup2(memory, 0)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(python, [python, *args])


def refresh_libraries() -> None:
    """Import-time reads of the environment by pre-imported libraries, redone for this run."""
    kube_config = sys.modules.get("kubernetes.config.kube_config")
    if kube_config is None:
        return
    location = os.environ.get("KUBECONFIG", "~/.kube/config")
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = location  # type: ignore[attr-defined]
    package = sys.modules.get("kubernetes.config")
    if package is not None and hasattr(package, "KUBE_CONFIG_DEFAULT_LOCATION"):
        package.KUBE_CONFIG_DEFAULT_LOCATION = location  # type: ignore[attr-defined]


def run(*, python: str, args: list[str], base_path: list[str], sources: dict[str, int]) -> None:
    """Run the payload ``args[0]`` (or the one on stdin) as ``__main__``."""
    refresh_libraries()
    source: bytes | None = None
    if args:
        sys.argv = list(args)
        sys.path[:] = [os.path.dirname(os.path.realpath(args[0])), *base_path]
    else:  # pipelining: the payload is on stdin, as for `python -`
        sys.argv = [""]
        sys.path[:] = ["", *base_path]
        source = sys.stdin.buffer.read()

    def mismatch(archive: str, filename: str) -> None:
        run_cold(python, args, source=source, archive=archive)

    sys.meta_path.insert(0, PayloadFinder(sources, mismatch=mismatch))
    if source is None:
        runpy.run_path(args[0], run_name="__main__")
        return
    main = sys.modules["__main__"]
    main.__dict__.clear()
    main.__dict__.update({"__name__": "__main__", "__builtins__": __builtins__})
    exec(compile(source, "<stdin>", "exec"), main.__dict__)
