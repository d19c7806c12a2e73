"""What an API request needs of RBAC, and RBAC rules in kubebuilder's order.

A request's HTTP method and path name one Kubernetes verb on one resource (the
API server's own request info: GET of a name is ``get``, of a collection
``list``, with ``watch=true`` ``watch``; POST ``create``; PUT ``update``; PATCH
``patch``; DELETE of a name ``delete``, of a collection ``deletecollection``).
:func:`use_of` makes that mapping; :func:`rules_of` folds uses into one
ClusterRole rule per resource, sorted as controller-gen sorts them (by API group,
then resource; verbs sorted), and :func:`granted` reads the rules a role file
grants, so what it lacks and what it grants unused can be told.

A path is read as the API server reads it (percent-escapes decoded) and makes a use only
when every name in it is a Kubernetes name (:mod:`runner.rbac.names`): a request for
``%2A`` or ``"*"`` needs no rule anyone should write. :func:`render` refuses a rule
that is not made of such names, and quotes a name YAML would read as something else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from runner.kube import paths
from runner.rbac import names

#: Where a use came from: a run's request forwarded to the API server, a run's read
#: answered from the runtime's informers, or the runtime's own requests.
RUN, CACHE, RUNTIME = "run", "cache", "runtime"
SOURCES = (RUN, CACHE, RUNTIME)
READS = frozenset({"get", "list", "watch"})


@dataclass(frozen=True, order=True)
class Use:
    """One verb on one resource (``deployments``, or ``deployments/status``), in one
    namespace ("": cluster-wide — a cluster-scoped kind, or all namespaces)."""

    group: str
    resource: str
    verb: str
    namespace: str = ""

    def needs(self) -> str:
        """The missing rule as a Failure message names it: ``apps deployments patch in
        namespace ns1`` (``core`` for the core group)."""
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.group or 'core'} {self.resource} {self.verb} {where}"

    def problem(self) -> str:
        """Why no rule can be written for this use ("" when one can): a name that is no
        Kubernetes name (a wildcard, quotes, escapes) or a verb of no request."""
        return (
            names.group_problem(self.group)
            or names.resource_problem(self.resource)
            or names.verb_problem(self.verb)
            or names.namespace_problem(self.namespace)
        )

    def to_json(self) -> dict[str, str]:
        return {
            "group": self.group,
            "resource": self.resource,
            "verb": self.verb,
            "namespace": self.namespace,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Use:
        return cls(
            group=str(data.get("group") or ""),
            resource=str(data["resource"]),
            verb=str(data["verb"]),
            namespace=str(data.get("namespace") or ""),
        )


def use_of(method: str, path: str) -> Use | None:
    """The verb and resource a request to ``path`` needs; None for non-resource paths
    (``/version``, discovery), which every authenticated client may read, and for paths
    whose group, version, namespace or resource is no Kubernetes name once decoded (no
    rule could be written for them, and none should be asked for)."""
    url = urlsplit(path)
    # The API server authorizes the decoded path: %2A is its "*", %2F a separator.
    parts = [p for p in unquote(url.path).split("/") if p]
    watching = False
    # The deprecated watch paths: /api/v1/watch/..., /apis/<group>/<version>/watch/...
    at = 2 if parts[:1] == ["api"] else 3
    if len(parts) > at and parts[0] in ("api", "apis") and parts[at] == "watch":
        del parts[at]
        watching = True
    target = paths.parse_path("/" + "/".join(parts))
    if target is None:
        return None
    query = parse_qs(url.query)
    # RBAC names one subresource; the rest of a proxy path (pods/p/proxy/a/b) is its own.
    sub = target.subresource.split("/")[0]
    resource = f"{target.plural}/{sub}" if sub else target.plural
    verb = _verb(method.upper(), named=bool(target.name), watch=watching or _flag(query, "watch"))
    if verb is None or not names.is_label(target.version):
        return None
    # A namespace object is cluster-scoped: its own path is no namespace scope.
    use = Use(group=target.group, resource=resource, verb=verb, namespace=target.namespace)
    return None if use.problem() else use


def _verb(method: str, *, named: bool, watch: bool) -> str | None:
    if method in ("GET", "HEAD"):
        if watch:
            return "watch"
        return "get" if named else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)


def _flag(query: Mapping[str, list[str]], name: str) -> bool:
    values = query.get(name) or []
    return bool(values) and values[0].lower() not in ("false", "0")


@dataclass(frozen=True)
class Rule:
    """One ClusterRole rule: one API group, one resource, its verbs (sorted)."""

    group: str
    resource: str
    verbs: tuple[str, ...]

    def problem(self) -> str:
        """Why this rule must not be written ("" when it may): see :mod:`names`."""
        if not self.verbs:
            return f"rule for {self.group or 'core'} {self.resource} has no verb"
        return (
            names.group_problem(self.group)
            or names.resource_problem(self.resource)
            or next(filter(None, map(names.verb_problem, self.verbs)), "")
        )


def sort_key(group: str, resource: str) -> tuple[str, str]:
    """controller-gen's order: by API group, then resource."""
    return (group, resource)


def rules_of(uses: Iterable[Use]) -> list[Rule]:
    """One rule per (group, resource) with the union of verbs, in kubebuilder's order."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for use in uses:
        verbs.setdefault((use.group, use.resource), set()).add(use.verb)
    return [
        Rule(group=group, resource=resource, verbs=tuple(sorted(verbs[(group, resource)])))
        for group, resource in sorted(verbs, key=lambda k: sort_key(*k))
    ]


Grant = tuple[str, str, str]  # group, resource, verb


def granted(role: Mapping[str, Any]) -> set[Grant]:
    """Every (group, resource, verb) a Role or ClusterRole document lists ("*" kept as is)."""
    found: set[Grant] = set()
    for rule in role.get("rules") or []:
        if not isinstance(rule, Mapping):
            continue
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    found.add((str(group), str(resource), str(verb)))
    return found


def covers(grants: set[Grant], want: Grant) -> bool:
    """Whether ``grants`` allow ``want``, wildcards included."""
    group, resource, verb = want
    return any(
        g in (group, "*") and r in (resource, "*") and v in (verb, "*") for g, r, v in grants
    )


ROLE_KINDS = ("ClusterRole", "Role")
_PLAIN = re.compile(r"[a-z][a-z0-9.\-/]*")
# Plain scalars YAML 1.1 (PyYAML, kubectl's older parsers) reads as booleans or null.
_KEYWORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null"})


def scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as the same string: plain when it is a
    lower-case name YAML takes as a string, else double-quoted (JSON's quoting)."""
    if _PLAIN.fullmatch(text) and text not in _KEYWORDS:
        return text
    return json.dumps(text)


def render(
    rules: Sequence[Rule],
    *,
    kind: str = "ClusterRole",
    name: str = "manager-role",
    namespace: str = "",
    notes: Mapping[tuple[str, str], str] | None = None,
    header: str = "",
) -> str:
    """A role document as YAML text, controller-gen's layout, with a comment above a
    rule when ``notes`` has one for its (group, resource); a Role's ``namespace`` in its
    metadata when given. Raises ValueError for a rule :meth:`Rule.problem` refuses, and
    for a kind that is no role or a namespace that is no name: nothing wider than the
    rules' names is ever written."""
    if kind not in ROLE_KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(ROLE_KINDS)}")
    if namespace and (kind != "Role" or names.namespace_problem(namespace)):
        raise ValueError(f"a {kind} cannot be in namespace {namespace!r}")
    for rule in rules:
        if problem := rule.problem():
            raise ValueError(f"refusing to render a rule: {problem}")
    lines = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    lines += [
        "apiVersion: rbac.authorization.k8s.io/v1",
        f"kind: {kind}",
        "metadata:",
        f"  name: {scalar(name)}",
    ]
    if namespace:
        lines.append(f"  namespace: {namespace}")
    lines.append("rules:")
    for rule in rules:
        note = (notes or {}).get((rule.group, rule.resource))
        if note:
            lines.extend(f"  # {line}" for line in note.splitlines())
        lines += [
            "  - apiGroups:",
            f"      - {scalar(rule.group)}",
            "    resources:",
            f"      - {scalar(rule.resource)}",
        ]
        lines.append("    verbs:")
        lines.extend(f"      - {verb}" for verb in rule.verbs)
    if not rules:
        lines[-1] = "rules: []"
    return "\n".join(lines) + "\n"
