"""When a benchmark's objects are done: the runtime's status conditions read, a watch that
records when each object first converged, and a wait until the runs stop.

After a workload (``bench/workloads.py``) is installed and its CRs created, a benchmark
times them with :class:`Converged` and lets the runtime go quiet with :func:`settle`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from runner.kube import client as kube_client
from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.types import GVK


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = obj.get("status") or {}
    return {c.get("type", ""): c for c in status.get("conditions") or []}


def successful(obj: dict[str, Any]) -> bool:
    return conditions(obj).get("Successful", {}).get("status") == "True"


def at_generation(obj: dict[str, Any]) -> bool:
    """Successful at the object's current generation (runtimes that record it)."""
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    return successful(obj) and status.get("observedGeneration") == meta.get("generation")


class Converged:
    """Watches one kind in one namespace; records when each object first meets ``done``."""

    def __init__(
        self,
        client: kube_client.Client,
        gvk: GVK,
        namespace: str,
        *,
        done: Callable[[dict[str, Any]], bool] = at_generation,
    ) -> None:
        self.times: dict[tuple[str, int], float] = {}
        self._cond = threading.Condition()
        self._client = client
        self._gvk = gvk
        self._namespace = namespace
        self._done = done
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        path = self._client.resource(self._gvk).path(namespace=self._namespace)
        while True:
            try:
                for event in self._client.stream(path, query={}, read_timeout=600):
                    if isinstance(event, decode.Rejected):
                        continue  # not an object this benchmark made
                    obj = event["object"]
                    if not self._done(obj):
                        continue
                    key = (obj["metadata"]["name"], int(obj["metadata"].get("generation", 1)))
                    with self._cond:
                        self.times.setdefault(key, time.monotonic())
                        self._cond.notify_all()
            except kube_errors.KubeError:
                time.sleep(0.2)

    def wait(self, names: Sequence[str], *, generation: int = 1, timeout: float = 900) -> float:
        """The time the last of ``names`` converged at ``generation`` (or later)."""
        deadline = time.monotonic() + timeout

        def when(name: str) -> float | None:
            found = [t for (n, g), t in self.times.items() if n == name and g >= generation]
            return min(found) if found else None

        with self._cond:
            while True:
                seen = {name: when(name) for name in names}
                missing = [name for name, at in seen.items() if at is None]
                if not missing:
                    return max(at for at in seen.values() if at is not None)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"not converged within {timeout:g}s: {missing[:5]}")
                self._cond.wait(min(left, 1.0))


def settle(count: Callable[[], float], *, quiet: float = 3.0, timeout: float = 300) -> float:
    """Wait until ``count()`` (runs so far) has not changed for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    last, since = count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    return last
