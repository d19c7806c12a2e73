"""A real runner's probe and secure-metrics ports under idle connections and random
bearer tokens: its thread count stays bounded, probes answer, TokenReviews are rate limited."""

from __future__ import annotations

import contextlib
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

import devcluster
from devcluster import accounts
from runner.base.http import connections
from runner.kube.client import Client
from runner.kube.types import GVK
from runner.operations import access
from testkit import harness
from testkit.helpers import unique_name
from tests.runner.support import StartOperator, probe_watches

pytestmark = pytest.mark.integration

IDLE_PER_PORT = 300
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


def threads_of(operator: harness.OperatorProcess) -> int:
    proc = cast(
        subprocess.Popen[str], operator._proc
    )  # the runner process (harness keeps it private)
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError(f"no Threads: line for pid {proc.pid}")


def address_of(operator: harness.OperatorProcess, endpoint: str) -> tuple[str, int]:
    address = operator.address(endpoint)
    assert address, f"no {endpoint} endpoint logged; log tail:\n{operator.tail()}"
    host, _, port = address.rpartition(":")
    return host, int(port)


def test_idle_connections_and_random_tokens_stay_bounded(
    cluster: devcluster.Cluster, kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches(), args=("--metrics-secure", "--metrics-require-rbac"))
    health, metrics = address_of(operator, "health"), address_of(operator, "metrics")
    live = harness.scrape(f"http://{health[0]}:{health[1]}/healthz")
    assert live == (200, "ok\n"), f"expected a healthy runner live, saw {live}"
    before = threads_of(operator)
    idle: list[socket.socket] = []
    try:
        for address in (health, metrics):
            for _ in range(IDLE_PER_PORT):
                idle.append(socket.create_connection(address, timeout=5))
        started = time.monotonic()
        ready = operator.ready()
        seconds = time.monotonic() - started
        grown = threads_of(operator) - before
    finally:
        for conn in idle:
            conn.close()
    assert ready and seconds < 2, (
        f"expected /readyz 200 at once beside {2 * IDLE_PER_PORT} idle connections, "
        f"saw ready={ready} after {seconds:.2f}s"
    )
    # Each listener may have started its workers; nothing else may grow with connections.
    bound = 2 * connections.Limits().workers
    assert grown <= bound, (
        f"expected at most {bound} more runner threads with {2 * IDLE_PER_PORT} idle "
        f"connections, saw {grown} more"
    )

    url = f"https://{metrics[0]}:{metrics[1]}/metrics"
    with scraper(cluster, kube, namespace) as token:
        requests_before = api_requests(url, token)
        started = time.monotonic()
        codes = [harness.scrape(url, token=secrets.token_hex(16))[0] for _ in range(100)]
        elapsed = time.monotonic() - started
        spent = api_requests(url, token) - requests_before
    # Reviews of unknown tokens, plus a little of the runner's own traffic meanwhile.
    allowed = access.REVIEW_BURST + int(elapsed * access.REVIEWS_PER_SECOND) + 5
    assert spent <= allowed, (
        f"expected at most {allowed} API requests for 100 random tokens in {elapsed:.1f}s, "
        f"saw {spent}"
    )
    assert set(codes) <= {401, 429}, f"expected 401 or 429 for random tokens, saw {set(codes)}"


@contextlib.contextmanager
def scraper(cluster: devcluster.Cluster, kube: Client, namespace: str) -> Iterator[str]:
    """A token allowed to GET /metrics, for the duration of the block."""
    accounts.ensure(cluster, namespace=namespace, name="scraper")
    reader = unique_name("metrics-reader")
    kube.create(
        CLUSTER_ROLE,
        {
            "metadata": {"name": reader},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    try:
        kube.create(
            CLUSTER_ROLE_BINDING,
            {
                "metadata": {"name": reader},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": reader,
                },
                "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
            },
        )
        try:
            yield accounts.mint_token(cluster, namespace=namespace, name="scraper")
        finally:
            kube.delete(CLUSTER_ROLE_BINDING, name=reader)
    finally:
        kube.delete(CLUSTER_ROLE, name=reader)


def api_requests(url: str, token: str) -> float:
    """playbook_operator_api_requests_total, read with a token allowed to scrape."""
    code, body = harness.scrape(url, token=token)
    assert code == 200, f"expected the allowed scraper served, saw {code}"
    for line in body.splitlines():
        if line.startswith("playbook_operator_api_requests_total "):
            return float(line.split()[1])
    raise AssertionError("no playbook_operator_api_requests_total in /metrics")
