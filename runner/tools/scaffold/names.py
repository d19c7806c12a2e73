"""Names a new project or API is made of, checked with Kubernetes' own rules.

Outside the runtime flow (watch → queue → reconcile → ansible → status): ``create api``
turns ``--group``, ``--version`` and ``--kind`` into a :class:`Resource` here, and every
file it writes is named from that value. Validation happens before anything is written.

The rules are the API server's for a CustomResourceDefinition (apimachinery's
``validation.IsDNS1123Subdomain`` and ``IsDNS1035Label``, apiextensions' CRD checks) and
kubebuilder's for the flags: the group is ``<group>.<domain>`` (so ``--group cache`` in a
project of domain ``example.com`` serves ``cache.example.com``), and a CRD group needs a
dot; the kind is UpperCamelCase and its lower-case form a DNS-1035 label; the version is
Kubernetes' ``v<major>[alpha|beta<minor>]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runner.tools.scaffold.errors import InvalidNameError

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_DNS1035_LABEL_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_VERSION_RE = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
_KIND_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253


def check_label(*, field: str, value: str) -> str:
    """``value`` if it is a DNS-1123 label (a project name, one part of a domain)."""
    if len(value) > LABEL_MAX:
        raise InvalidNameError(field=field, value=value, problem=f"longer than {LABEL_MAX}")
    if not _DNS1123_LABEL_RE.match(value):
        raise InvalidNameError(
            field=field,
            value=value,
            problem="must be a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit",
        )
    return value


def check_subdomain(*, field: str, value: str) -> str:
    """``value`` if it is a DNS-1123 subdomain (a domain, an API group)."""
    if len(value) > SUBDOMAIN_MAX:
        raise InvalidNameError(field=field, value=value, problem=f"longer than {SUBDOMAIN_MAX}")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        raise InvalidNameError(
            field=field,
            value=value,
            problem="must be a DNS-1123 subdomain: dot-separated lower-case labels of "
            "letters, digits and '-'",
        )
    return value


def check_version(value: str) -> str:
    if not _VERSION_RE.match(value):
        raise InvalidNameError(
            field="--version",
            value=value,
            problem="must be a Kubernetes API version: v<N>, v<N>alpha<M> or v<N>beta<M> "
            "(e.g. v1, v1alpha1, v2beta3)",
        )
    return value


def check_kind(value: str) -> str:
    if not _KIND_RE.match(value):
        raise InvalidNameError(
            field="--kind",
            value=value,
            problem="must be UpperCamelCase: a capital letter, then letters and digits "
            "(e.g. Memcached, AppConfig)",
        )
    if len(value) > LABEL_MAX or not _DNS1035_LABEL_RE.match(value.lower()):
        raise InvalidNameError(
            field="--kind",
            value=value,
            problem=f"its lower-case form must be a DNS-1035 label (at most {LABEL_MAX})",
        )
    return value


def plural(kind: str) -> str:
    """The resource name of ``kind``: lower case, English plural (kubebuilder's rules for
    the regular cases: Memcached → memcacheds, Policy → policies, Box → boxes)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


@dataclass(frozen=True)
class Resource:
    """One API of a project: ``group`` as given (``cache``), the project's ``domain``."""

    group: str
    domain: str
    version: str
    kind: str
    namespaced: bool = True

    @property
    def full_group(self) -> str:
        return f"{self.group}.{self.domain}" if self.domain else self.group

    @property
    def plural(self) -> str:
        return plural(self.kind)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.full_group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.full_group}"

    @property
    def scope(self) -> str:
        return "Namespaced" if self.namespaced else "Cluster"


def resource(
    *, group: str, domain: str, version: str, kind: str, namespaced: bool = True
) -> Resource:
    """A checked :class:`Resource`; raises :class:`InvalidNameError` naming the flag."""
    check_subdomain(field="--group", value=group)
    check_version(version)
    check_kind(kind)
    made = Resource(group=group, domain=domain, version=version, kind=kind, namespaced=namespaced)
    full = made.full_group
    if "." not in full:
        raise InvalidNameError(
            field="--group",
            value=group,
            problem="a CRD's group needs a dot; this project has no domain, so give the "
            "whole group (e.g. cache.example.com)",
        )
    check_subdomain(field="--group", value=full)
    if not _DNS1035_LABEL_RE.match(made.plural) or len(made.crd_name) > SUBDOMAIN_MAX:
        raise InvalidNameError(
            field="--kind", value=kind, problem=f"its CRD name {made.crd_name!r} is not valid"
        )
    return made


def project_name(value: str) -> str:
    return check_label(field="--project-name", value=value)


def domain(value: str) -> str:
    return check_subdomain(field="--domain", value=value) if value else value
