"""watches.yaml: which Ansible role or playbook reconciles which kind, and how.

Read once at start-up, before anything is watched: every later stage (watch →
queue → reconcile → ansible → status) takes its per-kind settings from the
:class:`~runner.config.entry.Watch` values built here. Mistakes raise
:class:`~runner.base.errors.WatchesError` naming the file, the entry (counted from 1) and
the field (Kubernetes field-path style, list items counted from 0:
``selector.matchExpressions[0].operator``).

The format is operator-sdk's (``internal/ansible/watches/watches.go``), so valid
files load unchanged; relative ``role`` and ``playbook`` paths resolve against
``base_dir``, the current directory by default, as operator-sdk resolves them
against its working directory (``/opt/ansible`` in its image). Where operator-sdk
silently accepts a mistake we raise: unknown keys (it ignores them and matches
keys case-insensitively); ``role`` with ``playbook`` (it runs the playbook); a
finalizer's missing role or playbook when ``vars`` are set; a negative period or
artifact count; invalid selectors; duplicate keys (it keeps the last). A file
with no entries (empty, only comments, or ``[]``) loads as no watches, as in
operator-sdk: the runner starts with nothing to reconcile, which is where a new
project from ``playbook-operator init`` begins. YAML timestamps stay strings, as
sigs.k8s.io/yaml reads them, and an unset ``$VAR`` stays as written
(operator-sdk rewrites it to ``${VAR}``).

This module walks each entry's keys and checks them against one another (one of role
and playbook, readiness kinds outside the blacklist, no group/version/kind twice). Beside
it: ``document`` reads the file, ``fields`` reads one field and names it in errors,
``lookup`` finds roles and playbooks, ``entry`` holds the values built here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import astuple, replace
from pathlib import Path
from typing import Any

from runner.base import errors
from runner.config import admission, document, entry, fields, lookup, selector
from runner.kube import types as kube

__all__ = ["load"]

_KEYS = (
    *("group", "version", "kind", "role", "playbook", "vars", "reconcilePeriod", "manageStatus"),
    *("watchDependentResources", "watchClusterScopedResources", "maxRunnerArtifacts"),
    *("finalizer", "blacklist", "selector", "snakeCaseParameters", "markUnsafe"),
    "watchAnnotationsChanges",
    "allowAnsibleVarsFromSpec",
    "reconcileTimeout",
    "watchDependentReadiness",
    *("dependentSelector", "cacheSecrets"),
    *("kstatusConditions", "prune"),
    *admission.KEYS,
)


def load(
    path: Path,
    *,
    environ: Mapping[str, str] | None = None,
    roles_path: Sequence[str] = (),
    collections_path: Sequence[str] = (),
    base_dir: Path | None = None,
) -> list[entry.Watch]:
    """Read and check a watches.yaml, resolving roles and playbooks on disk.

    ``environ`` (default ``os.environ``) fills ``${VAR}`` and ``$VAR`` before
    parsing. ``roles_path`` and ``collections_path`` are searched like
    ``ANSIBLE_ROLES_PATH`` and ``ANSIBLE_COLLECTIONS_PATH``; the caller reads
    those, and an empty ``collections_path`` means Ansible's default. A file
    with no entries gives an empty list.
    """
    base = (Path.cwd() if base_dir is None else base_dir).absolute()
    search = lookup.Search.under(base, roles_path=roles_path, collections_path=collections_path)
    data = document.read(path, environ=os.environ if environ is None else environ)
    if data is None:  # no YAML node at all: an empty file, or only comments
        return []
    if not isinstance(data, list):
        problem = f"expected a YAML list of watches, saw {fields.describe(data)}"
        raise errors.WatchesError(path=str(path), entry=None, field=None, problem=problem)
    watches: list[entry.Watch] = []
    first: dict[kube.GVK, int] = {}
    for number, raw in enumerate(data, start=1):
        where = fields.Where(path=path, entry=number)
        watch = _watch(raw, where=where, search=search)
        if watch.gvk in first:
            where = replace(where, gvk=fields.label(*astuple(watch.gvk)))
            raise where.error(None, f"same group/version/kind as entry {first[watch.gvk]}")
        first[watch.gvk] = number
        watches.append(watch)
    return watches


def _watch(raw: object, *, where: fields.Where, search: lookup.Search) -> entry.Watch:
    if not isinstance(raw, dict):
        raise where.error(None, f"expected a mapping, saw {fields.describe(raw)}")
    where = replace(
        where, gvk=fields.label(*(raw.get(key) for key in ("group", "version", "kind")))
    )
    fields.check_keys(raw, _KEYS, where=where, prefix="")
    gvk = _gvk(raw, where=where, prefix="")
    role, playbook = lookup.target(raw, where=where, search=search, prefix="")
    if role is None and playbook is None:
        raise where.error(None, "one of 'role' or 'playbook' is required")
    artifacts = (
        fields.get(raw, "maxRunnerArtifacts", int, where=where)
        or entry.DEFAULT_MAX_RUNNER_ARTIFACTS
    )
    if artifacts < 0:
        raise where.error("maxRunnerArtifacts", f"expected 0 or more, saw {artifacts}")
    blacklist = fields.get(raw, "blacklist", list, where=where) or []
    try:
        label_selector = selector.LabelSelector.parse(raw.get("selector"))
    except selector.SelectorError as e:
        raise where.error("selector" + e.field, e.problem) from e
    try:
        dependent_selector = selector.LabelSelector.parse(raw.get("dependentSelector"))
    except selector.SelectorError as e:
        raise where.error("dependentSelector" + e.field, e.problem) from e
    blacklisted = frozenset(
        _blacklisted(item, where=where, prefix=f"blacklist[{i}]")
        for i, item in enumerate(blacklist)
    )
    return entry.Watch(
        gvk=gvk,
        role=role,
        playbook=playbook,
        vars=fields.variables(raw, where=where, prefix=""),
        reconcile_period=fields.duration(raw, "reconcilePeriod", where=where),
        manage_status=fields.flag(raw, "manageStatus", default=True, where=where),
        watch_dependent_resources=fields.flag(
            raw, "watchDependentResources", default=True, where=where
        ),
        watch_cluster_scoped_resources=fields.flag(
            raw, "watchClusterScopedResources", default=False, where=where
        ),
        max_runner_artifacts=artifacts,
        finalizer=_finalizer(raw, where=where, search=search),
        blacklist=blacklisted,
        selector=label_selector,
        snake_case_parameters=fields.flag(raw, "snakeCaseParameters", default=True, where=where),
        # Safe by default (operator-sdk defaults to false): CR strings are data, not
        # templates, unless the watch opts in with markUnsafe: false.
        mark_unsafe=fields.flag(raw, "markUnsafe", default=True, where=where),
        watch_annotations_changes=fields.flag(
            raw, "watchAnnotationsChanges", default=False, where=where
        ),
        allow_ansible_vars_from_spec=fields.flag(
            raw, "allowAnsibleVarsFromSpec", default=False, where=where
        ),
        reconcile_timeout=fields.duration(raw, "reconcileTimeout", where=where),
        watch_dependent_readiness=_readiness_kinds(raw, blacklist=blacklisted, where=where),
        **_admission(raw, gvk=gvk, where=where, search=search),
        dependent_selector=dependent_selector,
        cache_secrets=fields.flag(raw, "cacheSecrets", default=False, where=where),
        kstatus_conditions=fields.flag(raw, "kstatusConditions", default=True, where=where),
        prune=fields.flag(raw, "prune", default=False, where=where),
    )


def _gvk(raw: Mapping[str, Any], *, where: fields.Where, prefix: str) -> kube.GVK:
    group = fields.get(raw, "group", str, where=where, prefix=prefix) or ""
    version, kind = (
        fields.get(raw, key, str, where=where, prefix=prefix) for key in ("version", "kind")
    )
    for key, value in (("version", version), ("kind", kind)):
        if not value:
            raise where.error(prefix + key, "required" if value is None else "must not be empty")
    return kube.GVK(group=group, version=version or "", kind=kind or "")


def _blacklisted(raw: object, *, where: fields.Where, prefix: str) -> kube.GVK:
    if not isinstance(raw, dict):
        raise where.error(
            prefix, f"expected a mapping of group, version, kind; saw {fields.describe(raw)}"
        )
    fields.check_keys(raw, ("group", "version", "kind"), where=where, prefix=prefix + ".")
    return _gvk(raw, where=where, prefix=prefix + ".")


def _readiness_kinds(
    raw: Mapping[str, Any], *, blacklist: frozenset[kube.GVK], where: fields.Where
) -> frozenset[str]:
    """``watchDependentReadiness``: the child kinds, as ``Kind.group``."""
    key = "watchDependentReadiness"
    items = fields.get(raw, key, list, where=where)
    if not items:
        return frozenset()
    if not fields.flag(raw, "watchDependentResources", default=True, where=where):
        raise where.error(key, "needs watchDependentResources: true (children are not watched)")
    blacklisted = {gvk.group_kind for gvk in blacklist}
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        prefix = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise where.error(
                prefix, f"expected a mapping of group, kind; saw {fields.describe(item)}"
            )
        fields.check_keys(item, ("group", "kind"), where=where, prefix=prefix + ".")
        group = fields.get(item, "group", str, where=where, prefix=prefix + ".") or ""
        kind = fields.get(item, "kind", str, where=where, prefix=prefix + ".")
        if not kind:
            raise where.error(prefix + ".kind", "required" if kind is None else "must not be empty")
        group_kind = kube.GVK(group=group, version="", kind=kind).group_kind
        if group_kind in seen:
            raise where.error(prefix, f"same group and kind as item {seen[group_kind]}")
        if group_kind in blacklisted:
            raise where.error(prefix, f"{group_kind} is in the blacklist: it is never watched")
        seen[group_kind] = i
    return frozenset(seen)


def _admission(
    raw: Mapping[str, Any], *, gvk: kube.GVK, where: fields.Where, search: lookup.Search
) -> dict[str, admission.Hook | None]:
    """``validation:`` and ``mutation:`` (:mod:`runner.config.admission`)."""
    return {
        key: admission.parse(
            raw,
            key,
            gvk=gvk,
            error=where.error,
            resolve=lambda value, prefix: lookup.target(
                value, where=where, search=search, prefix=prefix
            ),
        )
        for key in admission.KEYS
    }


def _finalizer(
    raw: Mapping[str, Any], *, where: fields.Where, search: lookup.Search
) -> entry.Finalizer | None:
    value = fields.get(raw, "finalizer", dict, where=where)
    if value is None:
        return None
    fields.check_keys(value, ("name", "role", "playbook", "vars"), where=where, prefix="finalizer.")
    name = fields.get(value, "name", str, where=where, prefix="finalizer.")
    if not name:
        raise where.error("finalizer.name", "required" if name is None else "must not be empty")
    role, playbook = lookup.target(value, where=where, search=search, prefix="finalizer.")
    variables = fields.variables(value, where=where, prefix="finalizer.")
    if role is None and playbook is None and not variables:
        raise where.error("finalizer", "needs a 'role', a 'playbook' or non-empty 'vars'")
    return entry.Finalizer(name=name, role=role, playbook=playbook, vars=variables)
