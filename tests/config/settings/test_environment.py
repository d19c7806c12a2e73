"""Per-watch settings from the environment, operator-sdk's variable names."""

from __future__ import annotations

from typing import Any

import pytest

from runner.base import errors
from runner.config import builder, sections
from runner.config.settings import parse_namespaces
from runner.kube.types import GVK

GVK_ = GVK("cache.example.com", "v1alpha1", "Memcached")


def reconcile(env: dict[str, str], **kw: Any) -> sections.ReconcileSettings:
    """The reconcile section as the settings are built: overrides resolved per watch."""
    return sections.ReconcileSettings(workers=builder.workers(gvks=[GVK_], environ=env), **kw)


def ansible(env: dict[str, str]) -> sections.AnsibleSettings:
    return sections.AnsibleSettings(verbosities=builder.verbosities(gvks=[GVK_], environ=env))


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param({}, 4, id="flag"),
        pytest.param({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "7"}, 7, id="env"),
        pytest.param({"WORKER_MEMCACHED_CACHE_EXAMPLE_COM": "3"}, 3, id="deprecated-env"),
        pytest.param(
            {"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "0"},
            4,
            id="non-positive-ignored",
        ),
    ],
)
def test_workers(env: dict[str, str], expected: int) -> None:
    assert reconcile(env, max_concurrent_reconciles=4).workers_for(GVK_) == expected


def test_workers_not_a_number_is_a_config_error() -> None:
    with pytest.raises(
        errors.ConfigError, match="MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM"
    ):
        reconcile({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "many"})


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param({}, 2, id="flag"),
        pytest.param({"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "5"}, 5, id="env"),
        pytest.param(
            {"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "9"}, 2, id="out-of-range-ignored"
        ),
    ],
)
def test_verbosity(env: dict[str, str], expected: int) -> None:
    assert ansible(env).verbosity_for(GVK_) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("", (), id="all"),
        pytest.param("a", ("a",), id="one"),
        pytest.param(" b, a ,,a", ("a", "b"), id="several"),
    ],
)
def test_watch_namespace(value: str, expected: tuple[str, ...]) -> None:
    assert parse_namespaces(value) == expected
