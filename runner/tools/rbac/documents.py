"""The role file's documents: its own ClusterRole (or Role), and a Role per namespace.

Part of ``playbook-operator rbac``, after the rules are derived: a use is scoped as the
request was. A request in one namespace needs a rule in that namespace only, so it
goes into a Role there (``metadata.namespace`` set, named as the file's role); only
requests that were cluster-wide (cluster-scoped kinds, all namespaces) go into the
file's ClusterRole. When the file is itself a Role, it already binds no further than
a namespace: a Role naming no namespace takes every use, as it always did; one naming
a namespace takes that namespace's (and the cluster-wide ones), and other namespaces
get Roles of their own. Against the file as it is, :func:`compare` names what it lacks
(``missing``), grants that nothing used (``unused``) and grants cluster-wide what was
used only in namespaces (``wider``, which ``--write`` narrows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.rbac import names
from runner.rbac import rules as rbac_rules

MAIN = ""  # the scope of the file's own document; any other scope is a namespace


@dataclass(frozen=True)
class Main:
    """The file's own document: what ``--write`` keeps of it."""

    kind: str = "ClusterRole"  # or Role
    name: str = "manager-role"
    namespace: str = ""  # a Role's, when the file names one

    @property
    def cluster_wide(self) -> bool:
        return self.kind == "ClusterRole"


@dataclass(frozen=True)
class Documents:
    """Rules by scope (:data:`MAIN`, or a namespace whose Role holds them)."""

    main: Main
    rules: Mapping[str, list[rbac_rules.Rule]]

    def grants(self, scope: str) -> set[rbac_rules.Grant]:
        return {(r.group, r.resource, v) for r in self.rules.get(scope, []) for v in r.verbs}


@dataclass(frozen=True)
class Diff:
    missing: list[tuple[str, rbac_rules.Grant]]  # (scope, grant)
    unused: list[tuple[str, rbac_rules.Grant]]
    wider: list[tuple[str, rbac_rules.Grant]]  # cluster-wide grants only namespaces used

    @property
    def clean(self) -> bool:
        return not self.missing and not self.unused


class RoleFileError(ValueError):
    """A role file document that is no Role or ClusterRole."""


def scope(use: rbac_rules.Use, *, main: Main) -> str:
    """The document a rule for ``use`` belongs in."""
    if main.cluster_wide:
        return use.namespace  # "" (cluster-wide) is the ClusterRole's
    if not main.namespace or use.namespace in ("", main.namespace):
        return MAIN
    return use.namespace


def describe(use: rbac_rules.Use, *, main: Main) -> str:
    """The rule ``use`` needs, where it would be written: for a denial's report and
    ``--grant-denied``'s question."""
    where = scope(use, main=main)
    if where == MAIN:
        ns = f" in namespace {main.namespace}" if main.namespace else ""
        doc = f"{main.kind} {main.name}{ns}"
    else:
        doc = f"a Role {main.name} in namespace {where}"
    group = use.group or '""'
    return f"{doc}: apiGroups [{group}], resources [{use.resource}], verbs [{use.verb}]"


def plan(uses: set[rbac_rules.Use], *, main: Main) -> Documents:
    """``uses`` split into documents; a namespace's Role leaves out what the file's
    ClusterRole grants already."""
    scoped: dict[str, set[rbac_rules.Use]] = {MAIN: set()}
    for use in uses:
        scoped.setdefault(scope(use, main=main), set()).add(use)
    wide = {(u.group, u.resource, u.verb) for u in scoped[MAIN]} if main.cluster_wide else set()
    rules = {
        where: rbac_rules.rules_of(
            u for u in found if where == MAIN or (u.group, u.resource, u.verb) not in wide
        )
        for where, found in scoped.items()
    }
    return Documents(main=main, rules={k: v for k, v in rules.items() if v or k == MAIN})


def render(
    planned: Documents, *, runtime: Mapping[tuple[str, str], set[str]], header: str = ""
) -> str:
    """The documents as one YAML stream: the file's own first, then the Roles by
    namespace; above a rule, which of its verbs are the runtime's own (``runtime``)."""
    main = planned.main
    mine = planned.rules.get(MAIN, [])
    texts = [
        rbac_rules.render(
            mine,
            kind=main.kind,
            name=main.name,
            namespace=main.namespace,
            notes=_notes(mine, runtime),
            header=header,
        )
    ]
    texts += [
        rbac_rules.render(
            rules, kind="Role", name=main.name, namespace=where, notes=_notes(rules, runtime)
        )
        for where, rules in sorted(planned.rules.items())
        if where != MAIN
    ]
    return "---\n".join(texts)


def read(loaded: list[Any]) -> Documents:
    """A role file's documents (YAML, loaded): the first is the file's own; each later
    Role in a namespace is that namespace's. Raises :class:`RoleFileError`."""
    docs = [doc for doc in loaded if doc is not None]
    if not docs or not isinstance(docs[0], Mapping):
        raise RoleFileError("not a Role or ClusterRole")
    main = _main(docs[0])
    rules: dict[str, list[rbac_rules.Rule]] = {MAIN: _rules(docs[0])}
    for doc in docs[1:]:
        if not isinstance(doc, Mapping) or doc.get("kind") != "Role":
            continue  # nothing this command writes
        namespace = str((doc.get("metadata") or {}).get("namespace") or "")
        where = MAIN if not main.cluster_wide and namespace == main.namespace else namespace
        rules.setdefault(where, []).extend(_rules(doc))
    return Documents(main=main, rules=rules)


def compare(planned: Documents, on_file: Documents) -> Diff:
    """What the file lacks and what it grants beyond ``planned`` (wildcards included)."""
    wide = on_file.main.cluster_wide
    file_main = on_file.grants(MAIN)
    missing = sorted(
        (where, g)
        for where in planned.rules
        for g in planned.grants(where)
        if not rbac_rules.covers(on_file.grants(where), g)
        and not (wide and rbac_rules.covers(file_main, g))
    )
    needed = {where: planned.grants(where) for where in planned.rules}
    anywhere = set().union(*needed.values())
    unused: list[tuple[str, rbac_rules.Grant]] = []
    wider: list[tuple[str, rbac_rules.Grant]] = []
    for where in on_file.rules:
        for g in sorted(on_file.grants(where)):
            if any(rbac_rules.covers({g}, n) for n in needed.get(where, set())):
                continue
            if where == MAIN and wide and any(rbac_rules.covers({g}, n) for n in anywhere):
                wider.append((where, g))
            else:
                unused.append((where, g))  # a wildcard is unused if nothing fits
    return Diff(missing=missing, unused=sorted(unused), wider=sorted(wider))


def grant_text(where: str, grant: rbac_rules.Grant) -> str:
    group, resource, verb = grant
    return f"{group or 'core'} {resource} {verb}" + (f" in namespace {where}" if where else "")


def _main(doc: Mapping[str, Any]) -> Main:
    kind = doc.get("kind")
    if kind not in rbac_rules.ROLE_KINDS:
        raise RoleFileError(f"kind {kind!r}: not a Role or ClusterRole")
    meta = doc.get("metadata") or {}
    if not isinstance(meta, Mapping):
        raise RoleFileError("metadata is not a mapping")
    namespace = str(meta.get("namespace") or "") if kind == "Role" else ""
    if names.namespace_problem(namespace):
        raise RoleFileError(names.namespace_problem(namespace))
    return Main(kind=str(kind), name=str(meta.get("name") or "manager-role"), namespace=namespace)


def _notes(
    rules: list[rbac_rules.Rule], runtime: Mapping[tuple[str, str], set[str]]
) -> dict[tuple[str, str], str]:
    """The comment above each rule some of whose verbs are the runtime's own."""
    out: dict[tuple[str, str], str] = {}
    for rule in rules:
        verbs = [v for v in rule.verbs if v in runtime.get((rule.group, rule.resource), set())]
        if verbs:
            note = f"runtime: {', '.join(verbs)} (the runner's own requests)"
            out[(rule.group, rule.resource)] = note
    return out


def _rules(doc: Mapping[str, Any]) -> list[rbac_rules.Rule]:
    """A document's rules, one per (group, resource, verbs) as granted (wildcards kept)."""
    return [
        rbac_rules.Rule(group=g, resource=r, verbs=(v,))
        for g, r, v in sorted(rbac_rules.granted(doc))
    ]
