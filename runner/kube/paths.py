"""REST paths of the Kubernetes API, parsed into group, version, namespace, resource.

The API proxy uses this to tell which resource a request addresses before it
forwards it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A parsed resource path."""

    group: str
    version: str
    namespace: str
    plural: str
    name: str
    subresource: str


def parse_path(path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    return Target(
        group=group,
        version=version,
        namespace=namespace,
        plural=rest[0],
        name=rest[1] if len(rest) > 1 else "",
        subresource="/".join(rest[2:]),
    )
