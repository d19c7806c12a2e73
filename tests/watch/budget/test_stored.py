"""What dependent informers store: the children reconciles read, trimmed; never the cluster.

Integration tests on the real cluster: a ConfigMap plays the owner; its children
(ConfigMaps, Secrets) are watched by :class:`runner.watch.dependents.DependentWatches`,
and a run's reads go through a real :class:`runner.proxy.OwnerProxy` in front of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from runner import proxy
from runner.config import selector
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject, make_key
from runner.proxy import ownership
from runner.watch import dependents
from testkit.helpers import wait_for
from tests.proxy.support import call
from tests.watch.budget.conftest import (
    CONFIGMAP,
    LAST_APPLIED,
    SECRET,
    Registry,
    owner_watch,
)

pytestmark = pytest.mark.integration

Child = Callable[..., KubeObject]


def _watching(
    registry: dependents.DependentWatches, kube: Client, owner: KubeObject, *children: KubeObject
) -> None:
    for obj in children:
        registry.ensure(ownership.Owner.of(owner), kube.resource(obj_gvk(obj)), obj)


def obj_gvk(obj: KubeObject) -> GVK:
    return GVK.of(obj)


def _held(registry: dependents.DependentWatches, kube: Client, obj: KubeObject) -> object:
    meta = obj["metadata"]
    return registry.get(kube.resource(obj_gvk(obj)), meta["namespace"], meta["name"])


def _wait_held(registry: dependents.DependentWatches, kube: Client, obj: KubeObject) -> KubeObject:
    found = wait_for(
        lambda: _held(registry, kube, obj),
        describe=f"the informer to hold {obj['metadata']['name']}",
        timeout=30,
    )
    assert isinstance(found, dict)
    return found


def test_stored_children_are_whole_and_strangers_are_not_stored(
    registry: Registry, kube: Client, owner: KubeObject, child: Child
) -> None:
    watching = registry(owner_watch())
    owned = child(CONFIGMAP, "owned")
    stranger = child(CONFIGMAP, "stranger", owned=False)
    assert owned["metadata"].get("managedFields"), "expected the API server to set managedFields"
    _watching(watching, kube, owner, owned)
    held = _wait_held(watching, kube, owned)
    # kubernetes.core compares what it read (from the cache) with its write's answer:
    # without managedFields every run would report a change.
    assert held["metadata"].get("managedFields") == owned["metadata"]["managedFields"], (
        f"expected managedFields kept, saw {sorted(held['metadata'])}"
    )
    # Client-side apply reads it back from the proxy's cached answer: it must stay.
    assert LAST_APPLIED in (held["metadata"].get("annotations") or {}), (
        f"expected the owned child's last-applied annotation kept, saw {held['metadata']}"
    )
    assert held.get("data") == {"key": "value"}, f"expected the whole child, saw {held}"
    assert _held(watching, kube, stranger) is None, (
        "expected an object no watched kind owns not to be stored, saw it held"
    )


@pytest.fixture
def caching_proxy(
    registry: Registry, kube: Client
) -> Iterator[tuple[proxy.OwnerProxy, dependents.DependentWatches]]:
    watching = registry(owner_watch())
    server = proxy.OwnerProxy(client=kube, cache=watching.get, caches=watching.caches)
    server.start()
    yield server, watching
    server.shutdown()


def test_a_secret_is_stored_without_data_and_a_run_still_reads_it(
    caching_proxy: tuple[proxy.OwnerProxy, dependents.DependentWatches],
    kube: Client,
    namespace: str,
    owner: KubeObject,
    child: Child,
) -> None:
    server, watching = caching_proxy
    secret = child(SECRET, "credentials")
    marker = child(CONFIGMAP, "marker")  # cached whole: tells when the informers listed
    _watching(watching, kube, owner, secret, marker)
    _wait_held(watching, kube, marker)
    wait_for(
        lambda: all(informer.synced.is_set() for informer in watching.informers()),
        describe="every dependent informer to list",
        timeout=30,
    )
    key = make_key(namespace=namespace, name="credentials")
    stored = [
        found
        for informer in watching.informers()
        if informer.resource.gvk == SECRET and (found := informer.get(key)) is not None
    ]
    assert stored, "expected the Secret informer to hold the owned Secret's metadata"
    assert all("data" not in obj for obj in stored), f"expected no Secret data stored, saw {stored}"
    with server.for_owner(owner) as env:
        code, headers, answer = call(
            env["KUBECONFIG"], "GET", f"/api/v1/namespaces/{namespace}/secrets/credentials"
        )
        hit_code, hit_headers, _ = call(
            env["KUBECONFIG"], "GET", f"/api/v1/namespaces/{namespace}/configmaps/marker"
        )
    assert code == 200 and answer.get("data") == {"key": "dmFsdWU="}, (
        f"expected the run to read the Secret's data, saw {code} {answer}"
    )
    assert "X-Cache" not in headers, f"expected the API server to answer, saw {headers}"
    assert hit_code == 200 and "X-Cache" in hit_headers, (
        f"expected the owned ConfigMap served from the cache, saw {hit_code} {hit_headers}"
    )


def test_cache_secrets_keeps_whole_secrets(
    registry: Registry, kube: Client, owner: KubeObject, child: Child
) -> None:
    watching = registry(owner_watch(cache_secrets=True))
    secret = child(SECRET, "credentials")
    _watching(watching, kube, owner, secret)
    held = _wait_held(watching, kube, secret)
    assert held.get("data") == {"key": "dmFsdWU="}, f"expected the whole Secret held, saw {held}"


@pytest.mark.parametrize(
    ("labels", "held"),
    [
        pytest.param({"app": "mine"}, True, id="selected"),
        pytest.param({"app": "theirs"}, False, id="not-selected"),
        pytest.param({}, False, id="unlabelled"),
    ],
)
def test_the_dependent_selector_limits_what_is_cached(  # noqa: PLR0917 (fixtures)
    registry: Registry,
    kube: Client,
    owner: KubeObject,
    child: Child,
    labels: dict[str, str],
    held: bool,
) -> None:
    only_mine = selector.LabelSelector.parse({"matchLabels": {"app": "mine"}})
    watching = registry(owner_watch(dependent_selector=only_mine))
    marker = child(CONFIGMAP, "marker", labels={"app": "mine"})
    candidate = child(CONFIGMAP, "candidate", labels=labels)
    _watching(watching, kube, owner, marker)
    _wait_held(watching, kube, marker)
    found = _held(watching, kube, candidate)
    assert (found is not None) is held, (
        f"expected a child labelled {labels} {'held' if held else 'not held'}, saw {found}"
    )
