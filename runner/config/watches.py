"""watches.yaml: which Ansible role or playbook reconciles which kind, and how.

Read once at start-up, before anything is watched: every later stage (watch →
queue → reconcile → ansible → status) takes its per-kind settings from the
:class:`Watch` values built here. Mistakes raise :class:`~runner.base.errors.WatchesError`
naming the file, the entry (counted from 1) and the field (Kubernetes field-path
style, list items counted from 0: ``selector.matchExpressions[0].operator``).

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
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from runner.base import errors
from runner.config import admission, selector
from runner.kube import types as kube

T = TypeVar("T")

DEFAULT_MAX_RUNNER_ARTIFACTS = 20
#: Ansible's own default, used when no collections path is given.
DEFAULT_COLLECTIONS_PATH = ("~/.ansible/collections", "/usr/share/ansible/collections")


@dataclass(frozen=True)
class Role:
    """A role as ansible-runner is given it: ``--role name`` with ``roles_path`` on the path."""

    name: str  # the directory's basename, or the FQCN of a collection role
    roles_path: Path | None  # None for a collection role: Ansible finds it by FQCN
    path: Path  # the role's directory, which exists


@dataclass(frozen=True)
class Finalizer:
    """Run on deletion: ``role`` or ``playbook``, else the watch's own, with ``vars`` added."""

    name: str
    role: Role | None
    playbook: Path | None
    vars: Mapping[str, Any] = field(hash=False)


# The field ``Watch.selector`` hides the module inside the class body.
_LabelSelector = selector.LabelSelector


@dataclass(frozen=True)
class Watch:
    """One entry of watches.yaml, with operator-sdk's defaults filled in."""

    gvk: kube.GVK
    role: Role | None  # exactly one of role and playbook is set
    playbook: Path | None
    vars: Mapping[str, Any] = field(hash=False)
    reconcile_period: float | None  # seconds; None: use the flag (operator-sdk ignores 0)
    manage_status: bool
    watch_dependent_resources: bool
    watch_cluster_scoped_resources: bool
    max_runner_artifacts: int
    finalizer: Finalizer | None
    blacklist: frozenset[kube.GVK]
    selector: selector.LabelSelector
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
    dependent_selector: _LabelSelector = field(default_factory=_LabelSelector)
    cache_secrets: bool = False


_KEYS = (
    *("group", "version", "kind", "role", "playbook", "vars", "reconcilePeriod", "manageStatus"),
    *("watchDependentResources", "watchClusterScopedResources", "maxRunnerArtifacts"),
    *("finalizer", "blacklist", "selector", "snakeCaseParameters", "markUnsafe"),
    "watchAnnotationsChanges",
    "allowAnsibleVarsFromSpec",
    "reconcileTimeout",
    "watchDependentReadiness",
    *("dependentSelector", "cacheSecrets"),
    *admission.KEYS,
)
#: Keys operator-sdk's Watch has but never reads from the file (``yaml:"-"``).
_FLAG_ONLY = {
    "maxConcurrentReconciles": ("--max-concurrent-reconciles", "MAX_CONCURRENT_RECONCILES"),
    "ansibleVerbosity": ("--ansible-verbosity", "ANSIBLE_VERBOSITY"),
}
_TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", dict: "a mapping"}
_TYPE_NAMES.update({list: "a list", float: "a number", type(None): "null"})


def load(
    path: Path,
    *,
    environ: Mapping[str, str] | None = None,
    roles_path: Sequence[str] = (),
    collections_path: Sequence[str] = (),
    base_dir: Path | None = None,
) -> list[Watch]:
    """Read and check a watches.yaml, resolving roles and playbooks on disk.

    ``environ`` (default ``os.environ``) fills ``${VAR}`` and ``$VAR`` before
    parsing. ``roles_path`` and ``collections_path`` are searched like
    ``ANSIBLE_ROLES_PATH`` and ``ANSIBLE_COLLECTIONS_PATH``; the caller reads
    those, and an empty ``collections_path`` means Ansible's default. A file
    with no entries gives an empty list.
    """
    base = (Path.cwd() if base_dir is None else base_dir).absolute()
    search = _Search(
        base_dir=base,
        roles_path=_dirs(roles_path, base=base),
        collections_path=_dirs(collections_path or DEFAULT_COLLECTIONS_PATH, base=base),
    )
    document = _read(path, environ=os.environ if environ is None else environ)
    if document is None:  # no YAML node at all: an empty file, or only comments
        return []
    if not isinstance(document, list):
        problem = f"expected a YAML list of watches, saw {_describe(document)}"
        raise errors.WatchesError(path=str(path), entry=None, field=None, problem=problem)
    watches: list[Watch] = []
    first: dict[kube.GVK, int] = {}
    for number, raw in enumerate(document, start=1):
        where = _Where(path=path, entry=number)
        watch = _watch(raw, where=where, search=search)
        if watch.gvk in first:
            where = replace(where, gvk=_label(*astuple(watch.gvk)))
            raise where.error(None, f"same group/version/kind as entry {first[watch.gvk]}")
        first[watch.gvk] = number
        watches.append(watch)
    return watches


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (``"300ms"``, ``"-1.5h"``, ``"2h45m"``), as time.ParseDuration."""
    body = text[1:] if text.startswith(("+", "-")) else text
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}: expected e.g. '30s', '1h2m' or '500ms'")
    nanoseconds, pos = 0, 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        assert match is not None  # every group may be empty, so it always matches
        whole, fraction, unit = match.groups()
        if not whole and not fraction:
            raise ValueError(f"invalid duration {text!r}: expected e.g. '30s', '1h2m' or '500ms'")
        if unit not in _UNITS:
            problem = f"unknown unit {unit!r}" if unit else "missing unit"
            raise ValueError(f"{problem} in duration {text!r}; units are ns, us, ms, s, m, h")
        scale = _UNITS[unit]
        nanoseconds += int(whole or 0) * scale
        if fraction:
            nanoseconds += int(fraction) * scale // 10 ** len(fraction)
        pos = match.end()
    if nanoseconds >= 2**63:
        raise ValueError(f"duration {text!r} is out of range")
    return (-nanoseconds if text.startswith("-") else nanoseconds) / 1e9


_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9}
_UNITS.update({"m": 60 * 10**9, "h": 3600 * 10**9})
_ENV_REFERENCE = re.compile(r"\$(?:\{([^}]+)\}|([A-Za-z0-9_]+))")


class _Loader(yaml.SafeLoader):
    """SafeLoader read with JSON semantics: no timestamps, no duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key in (key for key, _ in node.value if isinstance(key, yaml.ScalarNode)):
            if key.value in seen:
                problem = f"duplicate key {key.value!r}"
                raise yaml.constructor.ConstructorError(None, None, problem, key.start_mark)
            seen.add(key.value)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read(path: Path, *, environ: Mapping[str, str]) -> object:
    def fail(problem: str) -> errors.WatchesError:
        return errors.WatchesError(path=str(path), entry=None, field=None, problem=problem)

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise fail(f"not UTF-8 text: {e.reason} at byte {e.start}") from e
    except OSError as e:
        raise fail(f"cannot read the file: {e.strerror or e}") from e

    def expand(match: re.Match[str]) -> str:
        return environ.get(match.group(1) or match.group(2), match.group(0))

    try:
        return yaml.load(_ENV_REFERENCE.sub(expand, text), Loader=_Loader)
    except yaml.YAMLError as e:
        mark = e.problem_mark if isinstance(e, yaml.MarkedYAMLError) else None
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = e.problem if isinstance(e, yaml.MarkedYAMLError) and e.problem else str(e)
        raise fail(f"invalid YAML{at}: {problem}") from e


@dataclass(frozen=True)
class _Where:
    """The entry being read, to name in errors."""

    path: Path
    entry: int
    gvk: str | None = None

    def error(self, field: str | None, problem: str) -> errors.WatchesError:
        return errors.WatchesError(
            path=str(self.path), entry=self.entry, field=field, problem=problem, gvk=self.gvk
        )


@dataclass(frozen=True)
class _Search:
    """Where roles and playbooks are looked for."""

    base_dir: Path
    roles_path: tuple[Path, ...]
    collections_path: tuple[Path, ...]


def _watch(raw: object, *, where: _Where, search: _Search) -> Watch:
    if not isinstance(raw, dict):
        raise where.error(None, f"expected a mapping, saw {_describe(raw)}")
    where = replace(where, gvk=_label(*(raw.get(key) for key in ("group", "version", "kind"))))
    _check_keys(raw, _KEYS, where=where, prefix="")
    gvk = _gvk(raw, where=where, prefix="")
    role, playbook = _target(raw, where=where, search=search, prefix="")
    if role is None and playbook is None:
        raise where.error(None, "one of 'role' or 'playbook' is required")
    artifacts = _get(raw, "maxRunnerArtifacts", int, where=where) or DEFAULT_MAX_RUNNER_ARTIFACTS
    if artifacts < 0:
        raise where.error("maxRunnerArtifacts", f"expected 0 or more, saw {artifacts}")
    blacklist = _get(raw, "blacklist", list, where=where) or []
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
    return Watch(
        gvk=gvk,
        role=role,
        playbook=playbook,
        vars=_vars(raw, where=where, prefix=""),
        reconcile_period=_duration(raw, "reconcilePeriod", where=where),
        manage_status=_flag(raw, "manageStatus", default=True, where=where),
        watch_dependent_resources=_flag(raw, "watchDependentResources", default=True, where=where),
        watch_cluster_scoped_resources=_flag(
            raw, "watchClusterScopedResources", default=False, where=where
        ),
        max_runner_artifacts=artifacts,
        finalizer=_finalizer(raw, where=where, search=search),
        blacklist=blacklisted,
        selector=label_selector,
        snake_case_parameters=_flag(raw, "snakeCaseParameters", default=True, where=where),
        # Safe by default (operator-sdk defaults to false): CR strings are data, not
        # templates, unless the watch opts in with markUnsafe: false.
        mark_unsafe=_flag(raw, "markUnsafe", default=True, where=where),
        watch_annotations_changes=_flag(raw, "watchAnnotationsChanges", default=False, where=where),
        allow_ansible_vars_from_spec=_flag(
            raw, "allowAnsibleVarsFromSpec", default=False, where=where
        ),
        reconcile_timeout=_duration(raw, "reconcileTimeout", where=where),
        watch_dependent_readiness=_readiness_kinds(raw, blacklist=blacklisted, where=where),
        **_admission(raw, gvk=gvk, where=where, search=search),
        dependent_selector=dependent_selector,
        cache_secrets=_flag(raw, "cacheSecrets", default=False, where=where),
    )


def _gvk(raw: Mapping[str, Any], *, where: _Where, prefix: str) -> kube.GVK:
    group = _get(raw, "group", str, where=where, prefix=prefix) or ""
    version, kind = (_get(raw, key, str, where=where, prefix=prefix) for key in ("version", "kind"))
    for key, value in (("version", version), ("kind", kind)):
        if not value:
            raise where.error(prefix + key, "required" if value is None else "must not be empty")
    return kube.GVK(group=group, version=version or "", kind=kind or "")


def _blacklisted(raw: object, *, where: _Where, prefix: str) -> kube.GVK:
    if not isinstance(raw, dict):
        raise where.error(
            prefix, f"expected a mapping of group, version, kind; saw {_describe(raw)}"
        )
    _check_keys(raw, ("group", "version", "kind"), where=where, prefix=prefix + ".")
    return _gvk(raw, where=where, prefix=prefix + ".")


def _readiness_kinds(
    raw: Mapping[str, Any], *, blacklist: frozenset[kube.GVK], where: _Where
) -> frozenset[str]:
    """``watchDependentReadiness``: the child kinds, as ``Kind.group``."""
    key = "watchDependentReadiness"
    items = _get(raw, key, list, where=where)
    if not items:
        return frozenset()
    if not _flag(raw, "watchDependentResources", default=True, where=where):
        raise where.error(key, "needs watchDependentResources: true (children are not watched)")
    blacklisted = {gvk.group_kind for gvk in blacklist}
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        prefix = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise where.error(prefix, f"expected a mapping of group, kind; saw {_describe(item)}")
        _check_keys(item, ("group", "kind"), where=where, prefix=prefix + ".")
        group = _get(item, "group", str, where=where, prefix=prefix + ".") or ""
        kind = _get(item, "kind", str, where=where, prefix=prefix + ".")
        if not kind:
            raise where.error(prefix + ".kind", "required" if kind is None else "must not be empty")
        group_kind = kube.GVK(group=group, version="", kind=kind).group_kind
        if group_kind in seen:
            raise where.error(prefix, f"same group and kind as item {seen[group_kind]}")
        if group_kind in blacklisted:
            raise where.error(prefix, f"{group_kind} is in the blacklist: it is never watched")
        seen[group_kind] = i
    return frozenset(seen)


def _target(
    raw: Mapping[str, Any], *, where: _Where, search: _Search, prefix: str
) -> tuple[Role | None, Path | None]:
    role, playbook = (
        _get(raw, key, str, where=where, prefix=prefix) for key in ("role", "playbook")
    )
    for key, value in (("role", role), ("playbook", playbook)):
        if value == "":
            raise where.error(prefix + key, "must not be empty")
    if role is not None and playbook is not None:
        problem = "set together with 'role'; keep one (operator-sdk ignores the role)"
        raise where.error(prefix + "playbook", problem)
    if playbook is not None:
        path = search.base_dir / Path(playbook).expanduser()
        if not path.is_file():
            raise where.error(prefix + "playbook", f"playbook not found: expected a file at {path}")
        return None, path
    if role is not None:
        candidates = _role_candidates(role, search=search)
        for path, fqcn in candidates:
            if path.is_dir():
                if fqcn is not None:
                    return Role(name=fqcn, roles_path=None, path=path), None
                return Role(name=path.name, roles_path=path.parent, path=path), None
        looked = ", ".join(str(path) for path, _ in candidates)
        raise where.error(prefix + "role", f"role {role!r} not found; looked in: {looked}")
    return None, None


def _role_candidates(name: str, *, search: _Search) -> list[tuple[Path, str | None]]:
    """Where operator-sdk looks for a role, in order, each with its FQCN if from a collection."""
    if Path(name).is_absolute():
        return [(Path(name), None)]
    candidates: list[tuple[Path, str | None]] = []
    parts = name.split(".")
    if len(parts) == 3 and all(parts):
        namespace, collection, role = parts
        for parent in search.collections_path:
            path = parent / "ansible_collections" / namespace / collection / "roles" / role
            candidates.append((path, name))
    for parent in search.roles_path:
        candidates += [(parent / name, None), (parent / "roles" / name, None)]
    # A plain relative path ("roles/memcached") is the last resort, as in operator-sdk.
    return [*candidates, (search.base_dir / "roles" / name, None), (search.base_dir / name, None)]


def _admission(
    raw: Mapping[str, Any], *, gvk: kube.GVK, where: _Where, search: _Search
) -> dict[str, admission.Hook | None]:
    """``validation:`` and ``mutation:`` (:mod:`runner.config.admission`)."""
    return {
        key: admission.parse(
            raw,
            key,
            gvk=gvk,
            error=where.error,
            resolve=lambda value, prefix: _target(value, where=where, search=search, prefix=prefix),
        )
        for key in admission.KEYS
    }


def _finalizer(raw: Mapping[str, Any], *, where: _Where, search: _Search) -> Finalizer | None:
    value = _get(raw, "finalizer", dict, where=where)
    if value is None:
        return None
    _check_keys(value, ("name", "role", "playbook", "vars"), where=where, prefix="finalizer.")
    name = _get(value, "name", str, where=where, prefix="finalizer.")
    if not name:
        raise where.error("finalizer.name", "required" if name is None else "must not be empty")
    role, playbook = _target(value, where=where, search=search, prefix="finalizer.")
    variables = _vars(value, where=where, prefix="finalizer.")
    if role is None and playbook is None and not variables:
        raise where.error("finalizer", "needs a 'role', a 'playbook' or non-empty 'vars'")
    return Finalizer(name=name, role=role, playbook=playbook, vars=variables)


def _vars(raw: Mapping[str, Any], *, where: _Where, prefix: str) -> Mapping[str, Any]:
    value = _get(raw, "vars", dict, where=where, prefix=prefix) or {}
    for key in value:
        if not isinstance(key, str):
            raise where.error(f"{prefix}vars", f"keys must be strings, saw {_describe(key)}")
    return MappingProxyType(value)


def _duration(raw: Mapping[str, Any], key: str, *, where: _Where) -> float | None:
    """A Go duration key (``reconcilePeriod``, ``reconcileTimeout``); absent or zero is
    None: the flag's value applies (operator-sdk's reading of ``reconcilePeriod``)."""
    value = raw.get(key)
    if value is None or (type(value) is int and value == 0):
        return None
    if not isinstance(value, str):
        hint = f"; write '{value}s' for seconds" if type(value) is int else ""
        problem = f"expected a Go duration such as '30s' or '1h2m', saw {_describe(value)}{hint}"
        raise where.error(key, problem)
    try:
        seconds = parse_duration(value)
    except ValueError as e:
        raise where.error(key, str(e)) from e
    if seconds < 0:
        raise where.error(key, f"must not be negative, saw {value!r}")
    return seconds or None  # operator-sdk only overrides the flag with a non-zero period


def _flag(raw: Mapping[str, Any], key: str, *, default: bool, where: _Where) -> bool:
    value = _get(raw, key, bool, where=where)
    return default if value is None else value


def _get(
    raw: Mapping[str, Any], key: str, kind: type[T], *, where: _Where, prefix: str = ""
) -> T | None:
    """``raw[key]`` if it is a ``kind``; None when absent or null, as operator-sdk reads it."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise where.error(prefix + key, f"expected {_TYPE_NAMES[kind]}, saw {_describe(value)}")
    return value


def _check_keys(
    raw: Mapping[Any, Any], known: Sequence[str], *, where: _Where, prefix: str
) -> None:
    for key in raw:
        if key in known:
            continue
        if not prefix and key in _FLAG_ONLY:
            flag, variable = _FLAG_ONLY[key]
            problem = f"not read from watches.yaml; use {flag} or {variable}_<KIND>_<GROUP>"
            raise where.error(prefix + key, problem)
        lowered = {name.lower(): name for name in known}
        close = difflib.get_close_matches(str(key).lower(), list(lowered), n=1)
        hint = (
            f"did you mean {lowered[close[0]]!r}?"
            if close
            else f"expected one of {', '.join(known)}"
        )
        raise where.error(prefix + str(key), f"unknown key; {hint}")


def _dirs(entries: Sequence[str], *, base: Path) -> tuple[Path, ...]:
    return tuple(base / Path(entry).expanduser() for entry in entries if entry)


def _label(group: object, version: object, kind: object) -> str | None:
    """``group/version/kind`` to name an entry by, once its version and kind are known."""
    if not (isinstance(version, str) and version and isinstance(kind, str) and kind):
        return None
    return f"{group}/{version}/{kind}" if isinstance(group, str) and group else f"{version}/{kind}"


def _describe(value: object) -> str:
    kind = _TYPE_NAMES.get(type(value), type(value).__name__)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return kind if value is None else f"{kind} {shown}"
