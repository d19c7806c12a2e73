"""The names an RBAC rule may hold: Kubernetes names, spelled plainly, never a wildcard.

A rule is exactly as wide as the names in it: ``*`` as a group, resource or verb grants
every one, and a name the YAML of a role file reads otherwise than it was meant (``"*"``
with its quotes, ``on``) grants something else. Requests name their resources in URL
paths, which a role (or a CR's data in a role's task) may spell with percent-escapes
or quotes; the API server decodes them before it authorizes. So a use is only made of
names that pass here — API groups are DNS-1123 subdomains, resources, subresources and
namespaces DNS-1123 labels, verbs one of :data:`VERBS` — where a request becomes a use
(:func:`runner.rbac.rules.use_of`), where ``playbook-operator rbac`` reads a record,
and where a rule is rendered.
"""

from __future__ import annotations

import re

#: The verbs a request can need (``runner.rbac.rules``' mapping of methods); no wildcard.
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_MAX = 63
_SUBDOMAIN_MAX = 253


def is_label(text: str) -> bool:
    """A DNS-1123 label: lower-case letters, digits and inner dashes, at most 63."""
    return len(text) <= _LABEL_MAX and _LABEL.fullmatch(text) is not None


def is_subdomain(text: str) -> bool:
    """A DNS-1123 subdomain: dot-separated labels, at most 253 characters."""
    return 0 < len(text) <= _SUBDOMAIN_MAX and all(
        _LABEL.fullmatch(part) for part in text.split(".")
    )


def group_problem(group: str) -> str:
    """Why ``group`` cannot be a rule's API group ("" if it can; "" is the core group)."""
    if group == "" or is_subdomain(group):
        return ""
    return f"API group {group!r} is not a DNS-1123 subdomain"


def resource_problem(resource: str) -> str:
    """Why ``resource`` (``plural`` or ``plural/subresource``) cannot be a rule's."""
    parts = resource.split("/")
    if len(parts) <= 2 and all(is_label(part) for part in parts):
        return ""
    return f"resource {resource!r} is not a resource name (DNS-1123 labels)"


def namespace_problem(namespace: str) -> str:
    """Why ``namespace`` cannot scope a rule ("" if it can; "" is cluster-wide)."""
    if namespace == "" or is_label(namespace):
        return ""
    return f"namespace {namespace!r} is not a DNS-1123 label"


def verb_problem(verb: str) -> str:
    if verb in VERBS:
        return ""
    return f"verb {verb!r} is not one of {', '.join(VERBS)}"
