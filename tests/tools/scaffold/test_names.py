"""Group, version and kind are checked with Kubernetes' rules before anything is written."""

from __future__ import annotations

import pytest

from runner.tools.scaffold import names
from runner.tools.scaffold.errors import InvalidNameError


@pytest.mark.parametrize(
    ("group", "version", "kind", "field"),
    [
        pytest.param("Cache", "v1", "Memcached", "--group", id="group-upper-case"),
        pytest.param("cache_x", "v1", "Memcached", "--group", id="group-underscore"),
        pytest.param("-cache", "v1", "Memcached", "--group", id="group-leading-dash"),
        pytest.param("cache..x", "v1", "Memcached", "--group", id="group-empty-label"),
        pytest.param("c" * 250, "v1", "Memcached", "--group", id="group-too-long"),
        pytest.param("cache", "1", "Memcached", "--version", id="version-no-v"),
        pytest.param("cache", "v1.0", "Memcached", "--version", id="version-dotted"),
        pytest.param("cache", "v0", "Memcached", "--version", id="version-zero"),
        pytest.param("cache", "v1gamma1", "Memcached", "--version", id="version-unknown-stage"),
        pytest.param("cache", "v1alpha", "Memcached", "--version", id="version-stage-no-number"),
        pytest.param("cache", "V1", "Memcached", "--version", id="version-capital"),
        pytest.param("cache", "v1", "memcached", "--kind", id="kind-lower-case"),
        pytest.param("cache", "v1", "Mem-cached", "--kind", id="kind-dash"),
        pytest.param("cache", "v1", "Mem_cached", "--kind", id="kind-underscore"),
        pytest.param("cache", "v1", "1Memcached", "--kind", id="kind-digit-first"),
        pytest.param("cache", "v1", "M" + "x" * 63, "--kind", id="kind-too-long"),
    ],
)
def test_invalid_names_are_refused_naming_the_flag(
    group: str, version: str, kind: str, field: str
) -> None:
    with pytest.raises(InvalidNameError) as caught:
        names.resource(group=group, domain="example.com", version=version, kind=kind)
    assert caught.value.field == field, f"expected {field} to be blamed, saw {caught.value}"


def test_a_group_needs_a_dot_when_the_project_has_no_domain() -> None:
    with pytest.raises(InvalidNameError, match="needs a dot"):
        names.resource(group="cache", domain="", version="v1", kind="Memcached")
    made = names.resource(group="cache.example.com", domain="", version="v1", kind="Memcached")
    assert made.full_group == "cache.example.com", f"saw {made.full_group}"


@pytest.mark.parametrize(
    ("group", "version", "kind", "expected"),
    [
        pytest.param(
            "cache",
            "v1alpha1",
            "Memcached",
            ("cache.example.com", "memcacheds", "memcacheds.cache.example.com"),
            id="memcached",
        ),
        pytest.param(
            "apps", "v2beta3", "Policy", ("apps.example.com", "policies", None), id="y-plural"
        ),
        pytest.param("x", "v1", "Box", ("x.example.com", "boxes", None), id="x-plural"),
        pytest.param("x", "v10", "Gateway", ("x.example.com", "gateways", None), id="vowel-y"),
        pytest.param(
            "my-team.ops",
            "v1",
            "AppConfig",
            ("my-team.ops.example.com", "appconfigs", None),
            id="dotted-group",
        ),
    ],
)
def test_valid_names_give_the_upstream_group_and_plural(
    group: str, version: str, kind: str, expected: tuple[str, str, str | None]
) -> None:
    made = names.resource(group=group, domain="example.com", version=version, kind=kind)
    full, plural, crd = expected
    assert (made.full_group, made.plural) == (full, plural), f"saw {made}"
    if crd is not None:
        assert made.crd_name == crd, f"expected {crd}, saw {made.crd_name}"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("My-Operator", id="capitals"),
        pytest.param("my_operator", id="underscore"),
        pytest.param("op-", id="trailing-dash"),
        pytest.param("x" * 64, id="too-long"),
    ],
)
def test_invalid_project_names_are_refused(value: str) -> None:
    with pytest.raises(InvalidNameError):
        names.project_name(value)
