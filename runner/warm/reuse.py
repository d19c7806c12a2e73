"""What a warm run takes over from earlier runs instead of redoing it.

Part of :mod:`runner.warm`, used by :mod:`runner.warm.zygote`. Some costs of
every cold ``ansible-playbook`` and every cold module are the same from run to
run:

* **Module payloads.** Before a task runs a Python module, ansible-core builds
  its AnsiballZ payload: it parses the module and every ``module_utils`` file
  the module imports, transitively, and zips them (about 0.3 CPU-s for
  ``kubernetes.core.k8s``). ansible-core keeps the result only for the run, in
  its per-process temp dir. :class:`PayloadCache` keeps every payload a run
  built, with the files it was built from (path, size, modification time) and
  the modification times of the directories ``module_utils`` were looked up
  in; before the next run starts, it puts each payload whose files are all
  unchanged into that run's own cache, where ansible-core finds it as if the
  run had built it. Anything changed, or two modules sharing ansible-core's
  cache name, means the run builds the payload itself, as cold.
* **Routing metadata.** ``ansible.builtin``'s ``runtime.yml`` (370 KB of YAML,
  about 0.1 CPU-s) is parsed by every run's collection loader.
  :class:`RoutingMetadata` parses it once in the launcher; a run takes that
  parsed copy through ansible-core's own hook for this (``_meta_yml_to_dict``)
  when the file's bytes are the same. Each run is a fresh fork, so it gets its
  own copy, once: nothing a run does to it reaches another run.
* **Plugin options.** Every run reads the documentation (YAML) of about 40 of
  ansible-core's own plugins (every connection, become, callback, shell,
  inventory, vars and cache plugin it ships) to learn their configuration
  options: about 0.1 CPU-s, for a result that only depends on the installed
  ansible-core. :class:`PluginOptions` has ansible-core's own code read them
  once, in the launcher, and hands a run the options a plugin's documentation
  gives when the run loads that same plugin file with that same documentation.
* **Compiled code.** A module's payload is a zip, and Python imports from a
  zip by compiling every source file in it (it never writes bytecode there):
  about 0.15 CPU-s for ``kubernetes.core.k8s``, in every task. And every
  template a run renders is compiled by Jinja into Python source, which is
  then compiled. :class:`CompiledCode` keeps the code objects, keyed by the
  file's path in the zip (or Jinja's file name) and the exact source, and
  later runs load them instead of compiling, as Python's own ``__pycache__``
  does for files on disk.
"""

from __future__ import annotations

import _imp
import contextlib
import hashlib
import importlib
import importlib.util
import json
import marshal
import os
import shutil
import sys
import time
import zipimport
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.warm import templates

#: Payloads kept at most; the least recently stored go first.
STORE_LIMIT = 256
#: Compiled module files kept at most; the least recently stored go first.
CODE_LIMIT = 4096
_BUILTIN = ("ansible.builtin", "runtime.yml")
#: ansible-core's plugin types whose every plugin a run reads the options of.
_READ_BY_EVERY_RUN = ("become", "cache", "callback", "connection", "inventory", "shell", "vars")


def _stat(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


class _Sources:
    """The files one payload build read, noted as ansible-core reads them."""

    def __init__(self) -> None:
        self.files: dict[str, list[int] | None] = {}
        self.complete = True

    def note(self, path: str) -> None:
        path = os.path.abspath(path)
        self.files[path] = _stat(path)


class _PkgutilNoting:
    """``pkgutil`` as :mod:`ansible.executor.module_common` sees it: ``get_data`` notes
    the file a collection's ``module_utils`` source came from."""

    def __init__(self, real: Any, current: Callable[[], _Sources | None]) -> None:
        self._real = real
        self._current = current

    def get_data(self, package: str, resource: str) -> bytes | None:
        data: bytes | None = self._real.get_data(package, resource)
        sources = self._current()
        if data is not None and sources is not None:
            origin = getattr(sys.modules.get(package), "__file__", None)
            if origin:
                sources.note(os.path.join(os.path.dirname(origin), resource))
            else:
                sources.complete = False
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class PayloadCache:
    """Module payloads kept in ``directory`` across runs (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._building: _Sources | None = None

    # -- in the run's main process, before ansible-playbook starts ------------

    def install(self) -> None:
        """Place the still-valid payloads into this run's cache, and keep what it builds."""
        constants = importlib.import_module("ansible.constants")
        run_cache = Path(constants.DEFAULT_LOCAL_TMP) / "ansiballz_cache"
        with contextlib.suppress(OSError):
            self.directory.mkdir(parents=True, exist_ok=True)
            self.place(run_cache)
        self._patch(run_cache)

    def place(self, run_cache: Path) -> int:
        """Link every payload whose sources are unchanged into ``run_cache``; how many."""
        by_name: dict[str, list[Path]] = {}
        for manifest_path in self.directory.glob("*.json"):
            manifest = _read_manifest(manifest_path)
            if manifest is None or not _unchanged(manifest):
                continue
            by_name.setdefault(str(manifest["name"]), []).append(
                manifest_path.with_suffix(".payload")
            )
        run_cache.mkdir(parents=True, exist_ok=True)
        placed = 0
        for name, payloads in by_name.items():
            target = run_cache / name
            if len(payloads) != 1 or "/" in name or target.exists():
                continue  # two modules share the name: the run decides, as cold
            try:
                os.link(payloads[0], target)
            except OSError:
                try:
                    shutil.copyfile(payloads[0], target)
                except OSError:
                    continue
            placed += 1
        return placed

    def _patch(self, run_cache: Path) -> None:
        module_common = importlib.import_module("ansible.executor.module_common")
        action = importlib.import_module("ansible.plugins.action")
        slurp = module_common._slurp
        build = module_common.modify_module

        def noting_slurp(path: str) -> bytes:
            data: bytes = slurp(path)
            if self._building is not None:
                self._building.note(path)
            return data

        def keeping_build(*args: Any, **kwargs: Any) -> Any:
            self._building = sources = _Sources()
            started = time.time_ns()
            try:
                return build(*args, **kwargs)
            finally:
                self._building = None
                if sources.files and sources.complete:
                    name = kwargs.get("module_name", args[0] if args else None)
                    path = kwargs.get("module_path", args[1] if len(args) > 1 else None)
                    with contextlib.suppress(OSError, ValueError, TypeError):
                        self._keep(
                            run_cache=run_cache,
                            module_name=str(name),
                            module_path=str(path),
                            sources=sources,
                            since=started,
                        )

        noting_pkgutil = _PkgutilNoting(module_common.pkgutil, lambda: self._building)
        setattr(module_common, "_slurp", noting_slurp)  # noqa: B010 - patching a module
        setattr(module_common, "pkgutil", noting_pkgutil)  # noqa: B010
        setattr(module_common, "modify_module", keeping_build)  # noqa: B010
        setattr(action, "modify_module", keeping_build)  # noqa: B010 - imported by name there

    # -- in the worker that built a payload ----------------------------------

    def _keep(
        self, *, run_cache: Path, module_name: str, module_path: str, sources: _Sources, since: int
    ) -> None:
        module_common = importlib.import_module("ansible.executor.module_common")
        names: tuple[str, ...]
        try:
            names = (f"{module_common._get_ansible_module_fqn(module_path)}-",)
        except ValueError:  # a role's module: ansible-core names it after the module
            names = (f"ansible.legacy.{module_name}-", f"ansible.modules.{module_name}-")
        built = [
            entry
            for entry in os.scandir(run_cache)
            if entry.name.startswith(names)
            and not entry.name.endswith(("-part", ".lock"))
            and entry.stat().st_mtime_ns >= since - 1_000_000_000
        ]
        if len(built) != 1:
            return  # not built here, or ambiguous
        sources.note(module_path)
        lookup_dirs = module_common.module_utils_loader._get_paths(subdirs=False)
        manifest = {
            "name": built[0].name,
            "module": os.path.abspath(module_path),
            "ansible": importlib.import_module("ansible.release").__version__,
            "files": sorted([path, info] for path, info in sources.files.items()),
            "dirs": sorted([d, _stat(d)] for d in lookup_dirs if os.path.isdir(d)),
        }
        key = hashlib.sha256(f"{manifest['module']}\0{built[0].name}".encode()).hexdigest()[:32]
        staging = self.directory / f".{key}.{os.getpid()}"
        shutil.copyfile(built[0].path, staging)
        os.replace(staging, self.directory / f"{key}.payload")
        staging.write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(staging, self.directory / f"{key}.json")
        _trim(self.directory, "*.json", STORE_LIMIT, also=".payload")


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _unchanged(manifest: dict[str, Any]) -> bool:
    """Whether every file and lookup directory a payload was built from is as it was."""
    try:
        version = importlib.import_module("ansible.release").__version__
        if manifest["ansible"] != version:
            return False
        for path, info in (*manifest["files"], *manifest["dirs"]):
            if _stat(path) != info:
                return False
    except (KeyError, TypeError, ValueError):
        return False
    return True


class RoutingMetadata:
    """``ansible.builtin``'s routing metadata parsed once, in the launcher."""

    def __init__(self) -> None:
        self._parsed: dict[bytes, object] = {}

    def prepare(self) -> None:
        """In the launcher, before it forks: parse the file ansible-core ships."""
        with contextlib.suppress(Exception):  # only costs the saving
            ansible = importlib.import_module("ansible")
            meta = importlib.import_module("ansible.utils.collection_loader._collection_meta")
            path = Path(str(ansible.__file__)).parent / "config" / "ansible_builtin_runtime.yml"
            data = path.read_bytes()
            self._parsed[data] = meta._meta_yml_to_dict(data, _BUILTIN)

    def install(self) -> None:
        """In a run: the collection loader takes the parsed copy for the same bytes, once."""
        if not self._parsed:
            return
        finder = importlib.import_module("ansible.utils.collection_loader._collection_finder")
        parse = finder._meta_yml_to_dict
        parsed = self._parsed

        def meta_yml_to_dict(data: bytes | str, content_id: object) -> object:
            key = data.encode() if isinstance(data, str) else data
            found = parsed.pop(key, None) if isinstance(key, bytes) else None
            return found if found is not None else parse(data, content_id)

        setattr(finder, "_meta_yml_to_dict", meta_yml_to_dict)  # noqa: B010 - ansible-core's hook


class PluginOptions:
    """The configuration options of ansible-core's own plugins, read once in the launcher."""

    def __init__(self) -> None:
        # (plugin class, name, path) -> (its DOCUMENTATION, the options read from it)
        self._read: dict[tuple[str, str, str], tuple[str, object]] = {}

    def prepare(self) -> None:
        """In the launcher, before it forks: read every plugin's options with ansible-core's
        own ``_load_config_defs``, into this object instead of ansible-core's config."""
        with contextlib.suppress(Exception):  # only costs the saving
            self._prepare()

    def _prepare(self) -> None:
        loaders = importlib.import_module("ansible.plugins.loader")
        config = importlib.import_module("ansible.constants").config
        recorded: dict[tuple[str, str], object] = {}

        def initialize(type_name: str, name: str, options: object) -> None:
            recorded[(type_name, name)] = options

        config.has_configuration_definition = lambda type_name, name: False
        config.initialize_plugin_configuration_definitions = initialize
        try:
            for kind in _READ_BY_EVERY_RUN:
                loader = getattr(loaders, f"{kind}_loader")
                package = importlib.import_module(f"ansible.plugins.{kind}")
                for path in sorted(Path(str(package.__file__)).parent.glob("*.py")):
                    if path.name in ("__init__.py", "base.py"):  # base: a deprecated alias
                        continue
                    try:
                        module = importlib.import_module(f"ansible.plugins.{kind}.{path.stem}")
                        recorded.clear()
                        loader._load_config_defs(path.stem, module, str(module.__file__))
                    except Exception:  # an optional dependency missing: the run reads it
                        continue
                    key = (loader.class_name, path.stem, str(module.__file__))
                    options = recorded.get((kind, path.stem))  # None: the docs give none
                    self._read[key] = (getattr(module, "DOCUMENTATION", ""), options)
                loader._clear_caches()  # paths found before the run's own configuration
            loaders.fragment_loader._clear_caches()
        finally:
            del config.has_configuration_definition
            del config.initialize_plugin_configuration_definitions

    def install(self) -> None:
        """In a run: a plugin file read in the launcher, with the same documentation, gets
        the options read there; any other goes through ansible-core as usual."""
        if not self._read:
            return
        loaders = importlib.import_module("ansible.plugins.loader")
        constants = importlib.import_module("ansible.constants")
        plugin_loader = loaders.PluginLoader
        load_config_defs = plugin_loader._load_config_defs
        read = self._read

        def options_of(loader: Any, name: str, module: Any, path: str) -> None:
            found = read.get((loader.class_name, name, path))
            if found is None or getattr(module, "DOCUMENTATION", "") != found[0]:
                load_config_defs(loader, name, module, path)
                return
            type_name = loaders.get_plugin_class(loader.class_name)
            config = constants.config
            if (
                found[1] is not None
                and type_name in constants.CONFIGURABLE_PLUGINS
                and not (config.has_configuration_definition(type_name, name))
            ):
                config.initialize_plugin_configuration_definitions(type_name, name, found[1])

        setattr(plugin_loader, "_load_config_defs", options_of)  # noqa: B010


class CompiledCode:
    """Code objects compiled by earlier runs, keyed by what was compiled (and for what)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def code(
        self, *, kind: str, filename: str, source: bytes | str, compile_it: Callable[[], Any]
    ) -> Any:
        """The code ``compile_it()`` would return for ``source`` compiled as ``filename``."""
        key = f"{filename}\0".encode() + (
            source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
        )
        code = self.load(kind, key)
        if code is None:
            code = compile_it()
            self.save(kind, key, code)
        return code

    def load(self, kind: str, key: bytes) -> Any:
        """What :meth:`save` kept for ``kind`` and ``key``, or None."""
        with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
            return marshal.loads(self._path(kind, key).read_bytes())
        return None

    def save(self, kind: str, key: bytes, value: Any) -> None:
        """Keep ``value`` (anything marshal can write) for ``kind`` and ``key``."""
        stored = self._path(kind, key)
        with contextlib.suppress(OSError, ValueError):
            self.directory.mkdir(parents=True, exist_ok=True)
            staging = self.directory / f".{stored.name}.{os.getpid()}"
            staging.write_bytes(marshal.dumps(value))
            os.replace(staging, stored)
            _trim(self.directory, "*.code", CODE_LIMIT)

    def _path(self, kind: str, key: bytes) -> Path:
        digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
        digest.update(f"{kind}\0".encode())
        digest.update(key)
        return self.directory / f"{digest.hexdigest()[:40]}.code"

    def install_for_modules(self) -> None:
        """In a module child: files imported from the payload's zip are compiled through
        this cache (keyed by the file's path in the zip and its source)."""
        compile_source = zipimport._compile_source  # type: ignore[attr-defined]

        def cached_compile_source(pathname: str, source: bytes) -> Any:
            _, _, inner = pathname.rpartition(".zip/")
            code = self.code(
                kind="zip",
                filename=inner or pathname,
                source=source,
                compile_it=lambda: compile_source(pathname, source),
            )
            _imp._fix_co_filename(code, pathname)  # type: ignore[attr-defined]
            return code

        setattr(zipimport, "_compile_source", cached_compile_source)  # noqa: B010

    def install_for_templates(self) -> None:
        """In an ``ansible-playbook`` child: the Python that Jinja generates for a template
        is compiled through this cache (Jinja's own hook for another compile method), and
        templates are parsed and generated through :mod:`runner.warm.templates`."""
        environment = importlib.import_module("jinja2.environment").Environment
        compile_python = environment._compile

        def cached_compile(env: Any, source: str, filename: str) -> Any:
            return self.code(
                kind="jinja",
                filename=filename,
                source=source,
                compile_it=lambda: compile_python(env, source, filename),
            )

        setattr(environment, "_compile", cached_compile)  # noqa: B010
        templates.TemplateCode(self).install()


def _trim(directory: Path, pattern: str, limit: int, *, also: str = "") -> None:
    """Keep the ``limit`` most recently stored files matching ``pattern`` (and their
    ``also``-suffixed companions)."""
    found = list(directory.glob(pattern))
    if len(found) <= limit:
        return
    found.sort(key=lambda p: _stat(str(p)) or [0, 0])
    for old in found[: len(found) - limit]:
        for path in (old, *([old.with_suffix(also)] if also else [])):
            with contextlib.suppress(OSError):
                path.unlink()
