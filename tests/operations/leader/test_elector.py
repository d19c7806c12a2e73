"""The leader's fence with a fake API server that can hang: leadership is lost at
the renew deadline even while a renewal is blocked, every Lease request is bounded
by the time left, and a release stops the renewals and disarms the fence."""

from __future__ import annotations

import threading
import time
from typing import Any

from runner.kube import errors as kube_errors
from runner.operations import leader

DURATION, DEADLINE, RETRY = 2.0, 1.0, 0.1


class FakeApi:
    """One Lease held in memory, behind ``request``; ``hang`` blocks every request."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.hang = threading.Event()
        self.hung = threading.Event()
        self.let_go = threading.Event()
        self.timeouts: list[tuple[str, float | None]] = []
        self._lock = threading.Lock()

    def request(
        self, method: str, path: str, *, body: Any = None, timeout: float | None = None, **_: Any
    ) -> Any:
        self.timeouts.append((method, timeout))
        if self.hang.is_set():
            self.hung.set()
            self.let_go.wait(10)
            raise kube_errors.TransportError(f"{method} {path}: read timed out")
        with self._lock:
            if method == "GET":
                if self.lease is None:
                    raise kube_errors.api_error(status=404, method=method, path=path, body={})
                return {**self.lease, "spec": dict(self.lease["spec"])}
            if method == "POST" and self.lease is not None:
                raise kube_errors.api_error(status=409, method=method, path=path, body={})
            if method == "PUT" and body["metadata"].get("resourceVersion") != str(self.version):
                raise kube_errors.api_error(status=409, method=method, path=path, body={})
            self.version += 1
            self.lease = {
                **body,
                "metadata": {**body["metadata"], "resourceVersion": str(self.version)},
            }
            return self.lease


def elector(api: FakeApi) -> leader.LeaderElector:
    return leader.LeaderElector(
        client=api,  # type: ignore[arg-type]
        namespace="ns",
        name="lease",
        identity="me",
        lease_duration=DURATION,
        renew_deadline=DEADLINE,
        retry_period=RETRY,
    )


def test_leadership_is_lost_at_the_renew_deadline_while_a_renewal_hangs() -> None:
    api = FakeApi()
    candidate = elector(api)
    stop = threading.Event()
    assert candidate.acquire(stop), "expected to take a free Lease"
    taken = time.monotonic()
    lost = threading.Event()
    keeper = threading.Thread(
        target=candidate.keep, args=(stop,), kwargs={"on_lost": lost.set}, daemon=True
    )
    api.hang.set()
    keeper.start()
    try:
        assert api.hung.wait(5), "expected a renewal to be sent"
        assert lost.wait(5), "expected leadership lost while the renewal hangs"
        after = time.monotonic() - taken
        assert after <= DEADLINE + 0.5, (
            f"expected leadership lost about {DEADLINE}s after the last renewal; took {after:.2f}s"
        )
        assert not candidate.is_leader.is_set(), "expected is_leader cleared"
        bounds = [t for method, t in api.timeouts[2:]]  # after the acquiring GET and POST
        assert bounds and all(t is not None and 0 < t <= DEADLINE for t in bounds), (
            f"expected every renewal bounded by the time left before the deadline; saw {bounds}"
        )
    finally:
        api.let_go.set()
        stop.set()
        keeper.join(5)
    assert not keeper.is_alive(), "expected the renewals to stop once leadership was lost"


def test_a_release_stops_renewing_and_disarms_the_fence() -> None:
    api = FakeApi()
    candidate = elector(api)
    stop = threading.Event()
    assert candidate.acquire(stop), "expected to take a free Lease"
    lost = threading.Event()
    keeper = threading.Thread(
        target=candidate.keep, args=(stop,), kwargs={"on_lost": lost.set}, daemon=True
    )
    keeper.start()
    candidate.release()
    keeper.join(5)
    assert not keeper.is_alive(), "expected the renewals to stop at the release"
    assert api.lease is not None and api.lease["spec"]["holderIdentity"] is None, (
        f"expected the Lease released; saw {api.lease}"
    )
    assert not lost.wait(DEADLINE + 0.3), "expected no leadership loss after a release"
