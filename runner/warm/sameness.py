"""Same or cold: whether a start request's import-time inputs are a launcher's own.

Part of :mod:`runner.warm`. A launcher imported its libraries under one
environment (and, for ``ansible-playbook``, one ``ansible.cfg``); a child forked
from it is only the program a cold start would have been when those inputs are
the same. Used by :mod:`runner.warm.zygote` (which answers ``cold`` to anything
else, with the reason) and by :mod:`runner.warm.pool` (which keeps one program
launcher per distinct :func:`comparable` environment).

What may differ: the environment variables in :data:`PER_RUN`, which nothing
pre-imported reads at import time or which a child reads again; for the module
launcher, everything but Python's own start-up settings and the locale.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Environment variables that differ from run to run and that nothing pre-imported
#: reads at import time, or that a child re-reads (ansible-core's constants, the
#: kubernetes client's default kubeconfig). Any other difference means a cold start.
PER_RUN = frozenset(
    {
        "KUBECONFIG",
        "K8S_AUTH_KUBECONFIG",
        "AWX_ISOLATED_DATA_DIR",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION",
        "ANSIBLE_LOCAL_TEMP",
        "RUNNER_OMIT_EVENTS",
        "RUNNER_ONLY_FAILED_EVENTS",
        "JOB_ID",
        "_",
        "PWD",
        "OLDPWD",
        "SHLVL",
    }
)
#: Variables a module launcher compares: Python's own start-up settings and locale.
_MODULE_PREFIXES = ("PYTHON", "LC_")
_MODULE_NAMES = frozenset({"LANG", "LANGUAGE", "TZ", "HOME", "TMPDIR", "PATH"})

#: An ``ansible.cfg``: its path, modification time and size.
ConfigFile = tuple[str, float, int]


def comparable(environ: Mapping[str, str], *, kind: str) -> dict[str, str]:
    """The part of an environment that must equal the launcher's for a warm start."""
    if kind == "module":
        return {
            k: v for k, v in environ.items() if k in _MODULE_NAMES or k.startswith(_MODULE_PREFIXES)
        }
    return {k: v for k, v in environ.items() if k not in PER_RUN}


def ansible_config(environ: Mapping[str, str], cwd: str) -> ConfigFile | None:
    """The ansible.cfg ansible-core would read for ``environ`` and ``cwd`` (its own search
    order: $ANSIBLE_CONFIG, the working directory unless world-writable, ~, /etc), with
    its modification time and size; None when there is none."""
    candidates: list[str] = []
    from_env = environ.get("ANSIBLE_CONFIG")
    if from_env is not None:
        path = os.path.abspath(os.path.expanduser(from_env))
        candidates.append(os.path.join(path, "ansible.cfg") if os.path.isdir(path) else path)
    with contextlib.suppress(OSError):
        if not os.stat(cwd).st_mode & stat.S_IWOTH:
            candidates.append(os.path.join(cwd, "ansible.cfg"))
    home = environ.get("HOME") or os.path.expanduser("~")
    candidates += [os.path.join(home, ".ansible.cfg"), "/etc/ansible/ansible.cfg"]
    for path in candidates:
        with contextlib.suppress(OSError):
            info = os.stat(path)
            if os.access(path, os.R_OK):
                return path, info.st_mtime, info.st_size
    return None


@dataclass(frozen=True)
class Baseline:
    """A launcher's own import-time inputs, which a request must match to start warm."""

    kind: str
    env: dict[str, str]  # comparable() of the launcher's environment
    config_file: ConfigFile | None  # the program launcher's ansible.cfg

    @classmethod
    def own(cls, kind: str, *, environ: Mapping[str, str], cwd: str) -> Baseline:
        """The baseline of a launcher of ``kind`` started in ``environ`` and ``cwd``."""
        return cls(
            kind=kind,
            env=comparable(environ, kind=kind),
            config_file=ansible_config(environ, cwd) if kind == "program" else None,
        )

    def refusal(self, request: Mapping[str, Any]) -> str | None:
        """Why ``request`` cannot start warm here, or None."""
        if request.get("kind") != self.kind:
            return f"launcher serves {self.kind!r} requests"
        env = request.get("env")
        argv = request.get("argv")
        if not isinstance(env, dict) or not isinstance(argv, list) or not argv:
            return "malformed request"
        wanted = comparable(env, kind=self.kind)
        if wanted != self.env:
            names = sorted(
                k for k in wanted.keys() | self.env.keys() if wanted.get(k) != self.env.get(k)
            )
            return "environment differs from the launcher's: " + ", ".join(names[:8])
        if self.kind == "program":
            if ansible_config(env, str(request.get("cwd", "/"))) != self.config_file:
                return "another ansible.cfg applies"
            if not os.path.isfile(argv[0]):
                return f"{argv[0]} is not a file"
        return None
