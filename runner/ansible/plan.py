"""The plan of one Ansible run: how every caller turns a CR into a :class:`~.spec.RunSpec`.

Part of the Ansible stage (watch → queue → reconcile → **ansible** → status). Four
callers run a watch's content over a custom resource: a reconcile
(:mod:`runner.reconcile`), a preview and an RBAC sample (:mod:`runner.tools.preview`,
:mod:`runner.tools.rbac`, in check mode) and an admission webhook
(:mod:`runner.webhook`). They share, here and only here:

- the extra vars (:func:`runner.ansible.extravars.build` with the watch's CR-trust
  settings and its ``vars``);
- the roles and collections paths, ``--ansible-args`` (with ``--check --diff`` in
  check mode) and the event logging of the Ansible settings section;
- the environment: the runner's own variables (``run_env``) under those of the run's
  proxy session (:class:`Environment`, whose kubeconfig names the run's owner);
- ansible-operator's private data dir layout for a CR (:func:`private_dir`).

What differs is passed by the caller: the content (a watch's role, its finalizer's, a
webhook's), more variables (a finalizer's, a hook's, the admission review), the run's
directory, verbosity, artifacts kept, time limit and an event callback. This module sits
in the Ansible stage because it is the one way in to it; it imports nothing above it.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from runner.ansible import extravars, launch, spec
from runner.config import entry, roles, sections
from runner.kube.types import GVK, KubeObject

#: Appended to ``--ansible-args`` in check mode: Ansible's check mode, with the diffs
#: modules compute (``playbook-operator preview`` and ``rbac --sample``).
CHECK_ARGS = "--check --diff"
#: Artifact dirs a run keeps by default (ansible-runner's ``--rotate-artifacts``).
DEFAULT_ARTIFACTS = cast(int, spec.RunSpec.__dataclass_fields__["rotate_artifacts"].default)


class Environment(Protocol):
    """A session per run in which Ansible's modules reach the API server.

    The owner-injecting proxy gives each run a kubeconfig that identifies ``owner``;
    the read-only proxy (preview, webhooks) one that refuses writes; without a proxy,
    the operator's own kubeconfig is used.
    """

    def for_owner(
        self, owner: KubeObject
    ) -> contextlib.AbstractContextManager[Mapping[str, str]]: ...


@dataclass(frozen=True)
class Content:
    """What runs: exactly one of a role and a playbook."""

    role: roles.Role | None
    playbook: Path | None

    @classmethod
    def of(cls, watch: entry.Watch) -> Content:
        """The watch's own role or playbook."""
        return cls(role=watch.role, playbook=watch.playbook)


class Builder:
    """Builds each run's spec from one Ansible settings section; safe from many threads.

    ``run_env`` is kept by reference: the manager fills it at start-up, after the
    builders of its reconcilers and webhooks are made.
    """

    def __init__(
        self,
        *,
        ansible: sections.AnsibleSettings,
        environment: Environment,
        run_env: Mapping[str, str] | None = None,
    ) -> None:
        self.ansible = ansible
        self._environment = environment
        self._run_env = run_env if run_env is not None else {}

    def variables(
        self,
        obj: KubeObject,
        *,
        watch: entry.Watch,
        more_vars: Mapping[str, Any] | None = None,
        finalizer_vars: Mapping[str, Any] | None = None,
    ) -> extravars.ExtraVars:
        """The extra vars of a run over ``obj``: the watch's ``vars`` with ``more_vars``
        over them (a hook's), the finalizer's when finalizing, then the CR's."""
        return extravars.build(
            obj=obj,
            gvk=watch.gvk,
            snake_case=watch.snake_case_parameters,
            mark_unsafe=watch.mark_unsafe,
            watch_vars={**watch.vars, **(more_vars or {})},
            finalizer_vars=finalizer_vars,
            allow_ansible_vars=watch.allow_ansible_vars_from_spec,
        )

    @contextlib.contextmanager
    def open(
        self,
        *,
        owner: KubeObject,
        content: Content,
        variables: Mapping[str, Any],
        private_data_dir: Path,
        verbosity: int,
        ident: str | None = None,
        check: bool = False,
        rotate_artifacts: int = DEFAULT_ARTIFACTS,
        timeout: float | None = None,
        on_event: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> Iterator[spec.RunSpec]:
        """The run's spec, valid while the proxy session of ``owner`` is open: run it inside."""
        ansible = self.ansible
        role = content.role
        roles_path = ([role.roles_path] if role is not None and role.roles_path else []) + [
            Path(p) for p in ansible.roles_path
        ]
        with self._environment.for_owner(owner) as env:
            yield spec.RunSpec(
                ident=ident or new_ident(),
                private_data_dir=private_data_dir,
                playbook=content.playbook,
                role=role.name if role is not None else None,
                roles_path=tuple(roles_path),
                extravars=variables,
                envvars={**self._run_env, **env},
                verbosity=verbosity,
                cmdline=check_cmdline(ansible.args) if check else ansible.args,
                rotate_artifacts=rotate_artifacts,
                log_events=ansible.log_events,
                collections_path=tuple(Path(p) for p in ansible.collections_path),
                timeout=timeout,
                on_event=on_event,
            )


def new_ident() -> str:
    """A run's ``artifacts/<ident>``; ansible-operator logs it as ``job``."""
    return uuid.uuid4().hex[:16]


def check_cmdline(args: str) -> str:
    """``--ansible-args`` with :data:`CHECK_ARGS` appended (outer quotes stripped first)."""
    return f"{launch.strip_quotes(args.strip())} {CHECK_ARGS}".strip()


def private_dir(runner_dir: Path, *, gvk: GVK, namespace: str, name: str) -> Path:
    """ansible-operator's layout, ``<runner-dir>/<group>/<version>/<kind>/<namespace>/<name>``,
    where an empty group (core kinds) or namespace (cluster-scoped objects) is no
    directory at all: a Secret's is ``<runner-dir>/v1/Secret/<namespace>/<name>``."""
    parts = (gvk.group, gvk.version, gvk.kind, namespace, name)
    return runner_dir.joinpath(*(part for part in parts if part))
