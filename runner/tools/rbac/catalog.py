"""What the cluster serves, from API discovery: the check every rule passes before it is written.

Part of ``playbook-operator rbac``, between the record and the rules: a record names
groups and resources as requests spelled them (or as a saved JSON file says), and a
rule for a group or resource the cluster's discovery does not list grants nothing a
role used — or something it never should. Such uses are dropped and reported
(:func:`runner.tools.rbac.derive.screen`). Reads ``/api``, ``/apis`` and each version
of the groups the record names, through the kube client's discovery
(:mod:`runner.kube.discovery`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runner.base import errors
from runner.kube import discovery
from runner.kube import errors as kube_errors
from runner.rbac import rules as rbac_rules

#: Subresources RBAC checks that discovery does not list: ``<plural>/finalizers`` (the
#: OwnerReferencesPermissionEnforcement plugin's check of ``blockOwnerDeletion``).
_VIRTUAL = frozenset({"finalizers"})


class DiscoveryError(errors.PlaybookOperatorError):
    """The cluster's list of API groups could not be read: no rule can be checked."""


@dataclass(frozen=True)
class Catalog:
    """The (group, resource) pairs discovery lists, subresources included."""

    served: frozenset[tuple[str, str]]
    groups: frozenset[str]  # the API groups discovery lists ("": core)
    failed: Mapping[str, str]  # group -> why a version of it could not be read

    def problem(self, use: rbac_rules.Use) -> str:
        """Why no rule may be written for ``use`` by discovery ("" when it may)."""
        if (use.group, use.resource) in self.served:
            return ""
        plural, _, sub = use.resource.partition("/")
        if sub in _VIRTUAL and (use.group, plural) in self.served:
            return ""
        group = use.group or "core"
        if use.group in self.failed:
            return f"API discovery of group {group} failed ({self.failed[use.group]})"
        if use.group not in self.groups:
            return f"API group {group} is not served by the cluster (API discovery)"
        return f"{group} {use.resource} is not served by the cluster (API discovery)"


def read(fetch: discovery.Fetch, *, groups: Iterable[str]) -> Catalog:
    """What the cluster serves in ``groups``. Raises :class:`DiscoveryError` when ``/api``
    or ``/apis`` cannot be read (nothing could be checked); a group version that cannot
    be read leaves its resources unknown."""
    wanted = set(groups)
    versions: dict[str, list[str]] = {"": _strings(_document(fetch, "/api").get("versions"))}
    if wanted - {""}:
        for item in _list(_document(fetch, "/apis").get("groups")):
            listed = [v.get("version") for v in _list(item.get("versions"))]
            versions[str(item.get("name") or "")] = _strings(listed)
    reader = discovery.Discovery(fetch)
    served: set[tuple[str, str]] = set()
    failed: dict[str, str] = {}
    for group in sorted(wanted & versions.keys()):
        for version in versions[group]:
            try:
                found = reader.discover(group, version)
            except (kube_errors.KubeError, KeyError, TypeError, AttributeError) as exc:
                failed[group] = f"{group or 'core'}/{version}: {exc}"
                continue
            for resource in found:
                served.add((group, resource.plural))
                served.update((group, f"{resource.plural}/{s}") for s in resource.subresources)
    return Catalog(served=frozenset(served), groups=frozenset(versions), failed=failed)


def _document(fetch: discovery.Fetch, path: str) -> Mapping[str, Any]:
    try:
        answer = fetch(path)
    except kube_errors.KubeError as exc:
        raise DiscoveryError(f"cannot read API discovery ({path}): {exc}") from exc
    if not isinstance(answer, Mapping):
        raise DiscoveryError(f"cannot read API discovery ({path}): not a JSON object")
    return answer


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value or [] if isinstance(item, Mapping)]


def _strings(value: Any) -> list[str]:
    return [item for item in value or [] if isinstance(item, str) and item]
