"""A runner started while its API server cannot answer waits for it instead of dying.

Discovery at start-up (``runner.operations.manager.served``) retries transport errors and the
answers of an API server that is starting (503, 429, ...), and a kind missing from
discovery for a short grace; anything else, or a stop request, ends the wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from runner.base import errors
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, Resource
from runner.operations import manager

GVK_ = GVK("cache.example.com", "v1alpha1", "Memcached")
RESOURCE = Resource(
    gvk=GVK_, plural="memcacheds", namespaced=True, verbs=frozenset(), subresources=frozenset()
)


def failing(status: int) -> Exception:
    return kube_errors.api_error(status=status, method="GET", path="/apis", body={})


class Clock:
    """A fake monotonic clock that moves only when the code under test waits."""

    def __init__(self) -> None:
        self.now = 0.0


class Stop(threading.Event):
    """A stop event whose waits advance the fake clock instead of sleeping."""

    def __init__(self, clock: Clock, *, after: int | None = None) -> None:
        super().__init__()
        self.clock, self.after, self.waits = clock, after, 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        self.clock.now += timeout or 0.0
        return self.after is not None and self.waits >= self.after


def answers(*outcomes: Exception | Resource) -> Callable[[GVK], Resource]:
    queue = list(outcomes)

    def discover(gvk: GVK) -> Resource:
        outcome = queue.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return discover


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(kube_errors.TransportError("connection refused"), id="refused"),
        pytest.param(failing(503), id="starting"),
        pytest.param(failing(429), id="throttled"),
        pytest.param(
            kube_errors.NotFoundError(status=404, method="GET", path="/apis", body={}),
            id="group-not-listed-yet",
        ),
    ],
)
def test_discovery_waits_while_the_api_server_cannot_answer(first: Exception) -> None:
    clock = Clock()
    stop = Stop(clock)
    got = manager.served(answers(first, first, RESOURCE), GVK_, stop=stop, clock=lambda: clock.now)
    assert got == RESOURCE, f"expected discovery to succeed after two retries, saw {got}"
    assert stop.waits == 2, f"expected two waits before the answer, saw {stop.waits}"


def test_a_kind_still_missing_after_the_grace_is_not_served() -> None:
    clock = Clock()
    missing = kube_errors.NotFoundError(status=404, method="GET", path="/apis", body={})
    with pytest.raises(kube_errors.NotFoundError):
        manager.served(answers(*[missing] * 50), GVK_, stop=Stop(clock), clock=lambda: clock.now)
    assert clock.now >= 10.0, f"expected the grace of 10 s to pass first, {clock.now}s passed"


def test_a_refusal_is_not_retried() -> None:
    clock = Clock()
    stop = Stop(clock)
    with pytest.raises(kube_errors.ApiError):
        manager.served(answers(failing(403)), GVK_, stop=stop, clock=lambda: clock.now)
    assert stop.waits == 0, f"expected no retry of a 403, saw {stop.waits} waits"


def test_a_stop_request_ends_the_wait() -> None:
    clock = Clock()
    refused = kube_errors.TransportError("connection refused")
    with pytest.raises(errors.ConfigError, match="stopped before discovery"):
        manager.served(
            answers(*[refused] * 50), GVK_, stop=Stop(clock, after=3), clock=lambda: clock.now
        )
