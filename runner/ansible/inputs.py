"""A run's inputs: from a :class:`~runner.ansible.spec.RunSpec` to the files and the
environment ansible-runner is handed.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status), used
by :mod:`runner.ansible.launch` before each run. It writes the CR's private data
dir afresh (extra vars, inventory, a play for a role; :mod:`runner.ansible.privatedir`
keeps it to what the runtime wrote) and computes the run's environment: the
collections path with ours first, the roles path, explicit fact gathering,
pipelining, and Ansible's local temp dir inside the private data dir. Knows
nothing of ansible-runner's API.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from runner import warm
from runner.ansible import guard, privatedir, spec
from runner.config import lookup

#: The shipped ``playbook_operator.util`` collection, first on every collections path.
COLLECTION_DIR = Path(__file__).resolve().parent.parent / "collection"
#: Lets the collection's modules import ``runner.kube`` when the package is not installed.
LIB_ENV = "PLAYBOOK_OPERATOR_LIB"
_LIB_DIR = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Inputs:
    """What a run's private data dir now holds, for ansible-runner's configuration."""

    private_data_dir: Path
    env: dict[str, str]
    inventory: Path
    playbook: Path


def write(run: spec.RunSpec, *, python: str, launchers: warm.Launchers | None) -> Inputs:
    """Write ``run``'s inputs into its private data dir, removing what an earlier run
    left there. ``python``: the interpreter of the default inventory's localhost, unless
    ``launchers`` give the warm module interpreter."""
    pdd = run.private_data_dir.resolve()
    pdd.mkdir(mode=0o700, parents=True, exist_ok=True)
    privatedir.clear_inputs(pdd)
    for sub in ("env", "inventory", "project"):
        (pdd / sub).mkdir(mode=0o700)
    # Checked in the form Ansible reads (runner.ansible.guard): refused, not written, when
    # anything in it would be decoded as a typed value or make Ansible read it as YAML.
    privatedir.write_private(pdd / "env" / "extravars", guard.dumps(run.extravars, default=_json))
    env = environment(run)
    if env.get("ANSIBLE_LOCAL_TEMP") == str(pdd / privatedir.LOCAL_TEMP):
        # What the previous run of this CR left (one killed by its timeout never
        # cleans up); runs of one CR never overlap.
        shutil.rmtree(pdd / privatedir.LOCAL_TEMP, ignore_errors=True)
        (pdd / privatedir.LOCAL_TEMP).mkdir(mode=0o700)
    inventory = _inventory(run, pdd=pdd, env=env, python=python, launchers=launchers)
    return Inputs(
        private_data_dir=pdd, env=env, inventory=inventory, playbook=_playbook(run, pdd, env)
    )


def environment(run: spec.RunSpec) -> dict[str, str]:
    """The variables the run gets on top of the runtime's own environment."""
    env = dict(run.envvars)
    seen = {**os.environ, **env}
    if run.gathering_explicit and "ANSIBLE_GATHERING" not in seen:
        env["ANSIBLE_GATHERING"] = "explicit"
    if "ANSIBLE_LOCAL_TEMP" not in seen:
        # Ansible's controller-side temp dir inside the CR's private data dir, emptied
        # before each run, instead of ~/.ansible/tmp, where every killed run left one.
        env["ANSIBLE_LOCAL_TEMP"] = str(run.private_data_dir.resolve() / privatedir.LOCAL_TEMP)
    if "ANSIBLE_PIPELINING" not in seen:
        # Modules reach the local interpreter on stdin instead of through a temp
        # file and three shell commands per task (mkdir, chmod, rm).
        env["ANSIBLE_PIPELINING"] = "True"
    env["ANSIBLE_COLLECTIONS_PATH"] = _join_paths(
        [str(COLLECTION_DIR)],
        [str(p) for p in run.collections_path],
        _split(seen.get("ANSIBLE_COLLECTIONS_PATH")),
        _split(seen.get("ANSIBLE_COLLECTIONS_PATHS")),
        # Ansible's default collections path, after ours and the user's.
        [os.path.expanduser(p) for p in lookup.DEFAULT_COLLECTIONS_PATH],
        # operator_sdk.util for roles written for ansible-operator: last, so that an
        # installed copy (requirements.yml) is the one used wherever there is one.
        [str(COLLECTION_DIR / "compat")],
    )
    if run.roles_path:
        env["ANSIBLE_ROLES_PATH"] = _join_paths(
            [str(p) for p in run.roles_path], _split(seen.get("ANSIBLE_ROLES_PATH"))
        )
    env.setdefault(LIB_ENV, str(_LIB_DIR))
    return env


def _inventory(
    run: spec.RunSpec,
    *,
    pdd: Path,
    env: Mapping[str, str],
    python: str,
    launchers: warm.Launchers | None,
) -> Path:
    """The run's inventory: the spec's, a copy of $ANSIBLE_INVENTORY's, or localhost."""
    inventory = run.inventory
    user_inventory = [
        Path(source.strip()).resolve()
        for source in {**os.environ, **env}.get("ANSIBLE_INVENTORY", "").split(",")
        if source.strip()
    ]
    if inventory is None and user_inventory:
        # ansible-operator's habit: $ANSIBLE_INVENTORY (files or directories, with
        # their group_vars/host_vars) is copied into the run's inventory, freshly for
        # each run so nothing of an earlier run's inventory lingers. Without a
        # definition of localhost there, Ansible's implicit localhost (local
        # connection, this Python) serves role plays, outside the group "all".
        inventory = pdd / "inventory"
        for source in user_inventory:
            if source.is_dir():
                shutil.copytree(source, inventory, dirs_exist_ok=True)
                continue
            name = "hosts" if len(user_inventory) == 1 else source.name
            shutil.copy2(source, inventory / name)
            for beside in ("group_vars", "host_vars"):  # read beside a file, as Ansible does
                if (source.parent / beside).is_dir():
                    shutil.copytree(source.parent / beside, inventory / beside, dirs_exist_ok=True)
    if inventory is None:
        inventory = pdd / "inventory" / "hosts"
        interpreter = shlex.quote(
            launchers.module_interpreter(env={**os.environ, **env}, cwd=str(pdd / "project"))
            if launchers is not None
            else python
        )
        line = f"localhost ansible_connection=local ansible_python_interpreter={interpreter}"
        privatedir.write_private(inventory, line + "\n")
    return inventory


def _playbook(run: spec.RunSpec, pdd: Path, env: Mapping[str, str]) -> Path:
    """The spec's playbook, or a one-play playbook for its role."""
    if run.playbook is not None:
        return run.playbook.resolve()
    play: dict[str, Any] = {"name": run.role, "hosts": "localhost"}
    if env.get("ANSIBLE_GATHERING", os.environ.get("ANSIBLE_GATHERING")) == "explicit":
        play["gather_facts"] = False
    play["roles"] = [{"role": run.role}]
    playbook = pdd / "project" / "role.json"
    privatedir.write_private(playbook, json.dumps([play]))
    return playbook


def _json(value: Any) -> Any:
    """JSON for what YAML watch vars may hold besides JSON types."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _split(value: str | None) -> list[str]:
    return [p for p in (value or "").split(os.pathsep) if p]


def _join_paths(*groups: Sequence[str]) -> str:
    seen: dict[str, None] = {}
    for group in groups:
        for path in group:
            seen.setdefault(path, None)
    return os.pathsep.join(seen)
