"""One entry of watches.yaml as every later stage reads it: a kind's role or playbook, and how.

:mod:`runner.config.watches` builds these values once at start-up; the stages after it
(watch → queue → reconcile → ansible → status) only read them. They are frozen, and hold
operator-sdk's defaults already filled in, so no stage knows the file's spelling or its
defaults. Callers name them from here: ``entry.Watch``, ``entry.Finalizer``; a role is a
:class:`runner.config.roles.Role`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.config import admission, roles

# Named apart: the field ``Watch.selector`` hides the module inside the class body.
from runner.config import selector as selector_mod
from runner.kube import types as kube

DEFAULT_MAX_RUNNER_ARTIFACTS = 20


@dataclass(frozen=True)
class Finalizer:
    """Run on deletion: ``role`` or ``playbook``, else the watch's own, with ``vars`` added."""

    name: str
    role: roles.Role | None
    playbook: Path | None
    vars: Mapping[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Watch:
    """One entry of watches.yaml, with operator-sdk's defaults filled in."""

    gvk: kube.GVK
    role: roles.Role | None  # exactly one of role and playbook is set
    playbook: Path | None
    vars: Mapping[str, Any] = field(hash=False)
    reconcile_period: float | None  # seconds; None: use the flag (operator-sdk ignores 0)
    manage_status: bool
    watch_dependent_resources: bool
    watch_cluster_scoped_resources: bool
    max_runner_artifacts: int
    finalizer: Finalizer | None
    blacklist: frozenset[kube.GVK]
    selector: selector_mod.LabelSelector
    snake_case_parameters: bool
    mark_unsafe: bool
    watch_annotations_changes: bool
    # Pass spec keys named like Ansible's own variables (ansible_*) as extra vars.
    # Off: a CR author could otherwise pick the interpreter every module runs with.
    allow_ansible_vars_from_spec: bool = False
    # Seconds one run may take before it is killed; None: use --reconcile-timeout.
    reconcile_timeout: float | None = None
    # Child kinds (``Kind.group``, as GVK.group_kind) whose readiness changes trigger a
    # reconcile of their owner, besides the spec changes every child's do.
    watch_dependent_readiness: frozenset[str] = frozenset()
    # Admission webhooks of this kind (runner.webhook serves them); None: no webhook.
    validation: admission.Hook | None = None
    mutation: admission.Hook | None = None
    # The cache budget (runner.watch.budget): dependent informers hold only children this
    # selector selects (``selector`` filters primaries only, as in ansible-operator), and
    # Secrets whole only when cacheSecrets is true.
    dependent_selector: selector_mod.LabelSelector = field(
        default_factory=selector_mod.LabelSelector
    )
    cache_secrets: bool = False
    # kstatus' Reconciling, Ready and Stalled beside operator-sdk's conditions
    # (runner.status.kstatus); false for operators whose roles manage those themselves.
    kstatus_conditions: bool = True
    # After a successful run, delete owned children of the kinds its runs write that this
    # run did not touch through the proxy (runner.prune); off unless the watch opts in.
    prune: bool = False
