"""A real runner's metrics port tells its clients apart: one client's flood of random
bearer tokens never throttles another's scrapes, and ``GET /debug/rbac`` from another
host needs a token allowed that path, while ``rbac --from http://127.0.0.1...`` works."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import devcluster
from devcluster import accounts
from runner.kube.client import Client
from runner.kube.types import GVK
from testkit import harness
from testkit.helpers import unique_name, wait_for
from tests.runner.support import StartOperator, probe_watches

pytestmark = pytest.mark.integration

CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
# Two clients on one host: every 127/8 address is this host's loopback.
FLOODER = "127.0.0.2"
SCRAPER = "127.0.0.3"


def get(
    address: tuple[str, int],
    path: str,
    *,
    token: str | None = None,
    source: str | None = None,
    tls: bool = False,
) -> int:
    """GET ``path`` from ``source`` (a local address; None: any): the status."""
    bound = (source, 0) if source else None
    connection: http.client.HTTPConnection
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the runner's own self-signed certificate
        connection = http.client.HTTPSConnection(
            *address, timeout=10, source_address=bound, context=context
        )
    else:
        connection = http.client.HTTPConnection(*address, timeout=10, source_address=bound)
    try:
        connection.request(
            "GET", path, headers={"Authorization": f"Bearer {token}"} if token else {}
        )
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


@contextlib.contextmanager
def reader(
    cluster: devcluster.Cluster, kube: Client, *, namespace: str, account: str, url: str
) -> Iterator[str]:
    """A token of ServiceAccount ``account``, allowed ``get`` on the non-resource ``url``."""
    accounts.ensure(cluster, namespace=namespace, name=account)
    name = unique_name(f"reader-{account}")
    kube.create(
        CLUSTER_ROLE,
        {"metadata": {"name": name}, "rules": [{"nonResourceURLs": [url], "verbs": ["get"]}]},
    )
    try:
        kube.create(
            CLUSTER_ROLE_BINDING,
            {
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            },
        )
        try:
            user = f"system:serviceaccount:{namespace}:{account}"
            # The runner caches a refusal for a minute: use the token only once RBAC says yes.
            wait_for(
                lambda: allowed(kube, user=user, url=url),
                describe=f"{user} allowed get {url}",
            )
            yield accounts.mint_token(cluster, namespace=namespace, name=account)
        finally:
            kube.delete(CLUSTER_ROLE_BINDING, name=name)
    finally:
        kube.delete(CLUSTER_ROLE, name=name)


def allowed(kube: Client, *, user: str, url: str) -> bool:
    review = kube.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user,
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "nonResourceAttributes": {"path": url, "verb": "get"},
            },
        },
    )
    return bool((review.get("status") or {}).get("allowed"))


def address_of(operator: harness.OperatorProcess) -> tuple[str, int]:
    address = operator.address("metrics")
    assert address, f"no metrics endpoint logged; log tail:\n{operator.tail()}"
    host, _, port = address.rpartition(":")
    return host, int(port)


def own_address() -> str:
    """An address of this host that is not loopback (the one its default route uses)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # UDP: no packet is sent
        except OSError:
            pytest.skip("no route off this host: no address but loopback to test from")
        host = str(probe.getsockname()[0])
    if host.startswith("127."):
        pytest.skip("no address but loopback to test from")
    return host


class Flood:
    """Random bearer tokens from FLOODER, one after the other, until stopped."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.codes: list[int] = []
        self._address = address
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flood", daemon=True)

    def __enter__(self) -> Flood:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            token = secrets.token_hex(16)
            with contextlib.suppress(OSError, http.client.HTTPException):
                code = get(self._address, "/metrics", token=token, source=FLOODER, tls=True)
                self.codes.append(code)


def test_a_flood_of_random_tokens_never_throttles_a_known_scraper(
    cluster: devcluster.Cluster, kube: Client, namespace: str, start_operator: StartOperator
) -> None:
    operator = start_operator(probe_watches(), args=("--metrics-secure", "--metrics-require-rbac"))
    address = address_of(operator)
    with (
        reader(cluster, kube, namespace=namespace, account="scraper", url="/metrics") as token,
        Flood(address) as flood,
    ):
        wait_for(
            lambda: flood.codes.count(429),
            describe=f"the flooder from {FLOODER} throttled (429)",
            timeout=60,
        )
        # While the flooder's reviews are spent: a scraper never seen, from its own address,
        # is reviewed (the first scrape), then served from the cache from either address.
        during = len(flood.codes)
        codes = {
            f"first scrape from {SCRAPER}": get(
                address, "/metrics", token=token, source=SCRAPER, tls=True
            ),
            f"again from {SCRAPER}": get(
                address, "/metrics", token=token, source=SCRAPER, tls=True
            ),
            f"from the flooder's {FLOODER}": get(
                address, "/metrics", token=token, source=FLOODER, tls=True
            ),
        }
        # ...and the flood went on being throttled meanwhile.
        wait_for(
            lambda: flood.codes[during:].count(429),
            describe=f"the flooder from {FLOODER} still throttled after the scrapes",
            timeout=60,
        )
    assert set(codes.values()) == {200}, (
        f"expected the known scraper served through the flood, saw {codes}"
    )
    assert set(flood.codes) <= {401, 429}, (
        f"expected the flood's random tokens refused (401) or throttled (429), saw "
        f"{len(flood.codes)} answers: {sorted(set(flood.codes))}"
    )


def test_debug_rbac_off_loopback_needs_a_token_allowed_that_path(
    cluster: devcluster.Cluster,
    kube: Client,
    namespace: str,
    start_operator: StartOperator,
    tmp_path: Path,
) -> None:
    remote = own_address()
    # Every interface, as the default --metrics-bind-address=:8080 is.
    operator = start_operator(probe_watches(), args=("--metrics-bind-address=0.0.0.0:0",))
    _, port = address_of(operator)
    with (
        reader(cluster, kube, namespace=namespace, account="scraper", url="/metrics") as scraper,
        reader(cluster, kube, namespace=namespace, account="auditor", url="/debug/rbac") as auditor,
    ):
        codes = {
            "no token": get((remote, port), "/debug/rbac"),
            "a random token": get((remote, port), "/debug/rbac", token=secrets.token_hex(16)),
            "a token allowed /metrics": get((remote, port), "/debug/rbac", token=scraper),
            "a token allowed /debug/rbac": get((remote, port), "/debug/rbac", token=auditor),
            "/metrics with no token": get((remote, port), "/metrics"),
        }
    expected = {
        "no token": 401,
        "a random token": 401,
        "a token allowed /metrics": 403,
        "a token allowed /debug/rbac": 200,
        "/metrics with no token": 200,
    }
    assert codes == expected, f"from {remote} (not loopback): expected {expected}, saw {codes}"

    # What the docs say to run on the runner's host: no token, loopback.
    url = f"http://127.0.0.1:{port}/debug/rbac"
    shown = subprocess.run(
        [sys.executable, "-m", "runner", "rbac", "--from", url, "--role-file", "absent.yaml"],
        cwd=tmp_path,
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},  # as on a developer's host
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert shown.returncode == 0 and "kind:" in shown.stdout, (
        f"expected `rbac --from {url}` to print the rules; exit {shown.returncode}, "
        f"stdout {shown.stdout[:300]!r}, stderr {shown.stderr[-500:]!r}"
    )
