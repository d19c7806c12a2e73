"""The webhook listener without a cluster: certificates, refusals, counting, reloading."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from devcluster import certs as devcerts
from runner.base import errors
from runner.config import admission
from runner.kube.types import GVK
from runner.webhook import hooks, review, server
from tests.webhook.support import serving_cert

GADGET = GVK("webhook.test.example.com", "v1", "Gadget")
PATH = admission.path_for(admission.Kind.VALIDATION, GADGET)


class _Answerer:
    """Allows everything, with a warning naming the operation; waits for ``go`` first."""

    def __init__(self) -> None:
        hook = admission.Hook(
            kind=admission.Kind.VALIDATION, gvk=GADGET, role=None, playbook=Path("x"), vars={}
        )
        self.paths: Mapping[str, hooks.Served] = {
            PATH: hooks.Served(hook=hook, watch=None)  # type: ignore[arg-type]
        }
        self.go = threading.Event()
        self.go.set()
        self.deadlines: list[float] = []  # each request's deadline less its arrival

    def answer(
        self, served_hook: hooks.Served, request: review.Request, *, deadline: float
    ) -> review.Verdict:
        self.deadlines.append(deadline - time.monotonic())
        self.go.wait(timeout=60)
        return review.Verdict(allowed=True, warnings=(request.operation,))


class _Counts:
    def __init__(self) -> None:
        self.in_flight = 0
        self.done: list[tuple[str, int]] = []

    def webhook_started(self, webhook: str) -> None:
        self.in_flight += 1

    def webhook_finished(self, webhook: str, *, code: int, seconds: float) -> None:
        self.in_flight -= 1
        self.done.append((webhook, code))


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    serving_cert(tmp_path / "certs")
    return tmp_path / "certs"


@pytest.fixture
def counts() -> _Counts:
    return _Counts()


@pytest.fixture
def listening(certs: Path, counts: _Counts) -> Iterator[server.WebhookServer]:
    served = server.WebhookServer(
        answerer=_Answerer(),
        port=0,
        cert_dir=certs,
        max_concurrent=2,
        observer=counts,
        host="127.0.0.1",
    )
    served.start()
    yield served
    served.shutdown()


def _post(
    port: int,
    path: str,
    body: bytes,
    *,
    method: str = "POST",
    client: tuple[Path, Path] | None = None,
) -> tuple[int, bytes]:
    context = ssl._create_unverified_context()
    if client is not None:
        context.load_cert_chain(*client)
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        if len(body) > server.MAX_BODY:
            # Only the head, announcing the length: the answer comes before any body byte.
            connection.putrequest(method, path)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders()
        else:
            connection.request(
                method, path, body=body, headers={"Content-Type": "application/json"}
            )
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def _review() -> bytes:
    request = {"uid": "u1", "operation": "CREATE", "object": {"kind": "Gadget"}}
    return json.dumps(
        {"apiVersion": review.API_VERSION, "kind": review.KIND, "request": request}
    ).encode()


def test_missing_certificates_stop_the_start_naming_the_directory(tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError) as caught:
        server.WebhookServer(
            answerer=_Answerer(), port=0, cert_dir=tmp_path / "none", max_concurrent=1
        )
    assert str(tmp_path / "none") in str(caught.value) and "tls.crt" in str(caught.value), (
        f"expected the directory and the file named; saw {caught.value}"
    )


def test_a_review_is_answered_and_counted(listening: server.WebhookServer, counts: _Counts) -> None:
    status, body = _post(listening.port, PATH, _review())
    assert status == 200, f"expected 200, saw {status}: {body!r}"
    response = json.loads(body)["response"]
    assert response == {"uid": "u1", "allowed": True, "warnings": ["CREATE"]}, response
    assert counts.done == [(PATH, 200)] and counts.in_flight == 0, f"counted {counts.done}"
    assert listening.ready(), "expected the listening server ready"


@pytest.mark.parametrize(
    ("path", "method", "body", "code"),
    [
        pytest.param("/validate-nothing-v1-here", "POST", b"{}", 404, id="unknown-path"),
        pytest.param(PATH, "PUT", b"{}", 405, id="not-a-post"),
        pytest.param(PATH, "POST", b"not json", 400, id="not-a-review"),
        pytest.param(PATH, "POST", b" " * (server.MAX_BODY + 1), 413, id="body-over-3MiB"),
    ],
)
def test_what_is_no_review_is_refused(
    listening: server.WebhookServer, path: str, method: str, body: bytes, code: int
) -> None:
    status, answer = _post(listening.port, path, body, method=method)
    assert status == code, f"expected {code}, saw {status}: {answer[:200]!r}"


def _served_cert(port: int) -> bytes:
    context = ssl._create_unverified_context()
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def test_renewed_certificates_are_served_and_broken_ones_unready(
    listening: server.WebhookServer, certs: Path, tmp_path: Path
) -> None:
    before = _served_cert(listening.port)
    serving_cert(tmp_path / "renewed")
    for name in ("tls.crt", "tls.key"):
        shutil.copy(tmp_path / "renewed" / name, certs / name)
    assert listening.reload(), "expected the renewed pair to load"
    after = _served_cert(listening.port)
    assert after != before, "expected the renewed certificate served to new connections"
    (certs / "tls.key").write_text("garbage")
    assert not listening.reload() and not listening.ready(), "expected a broken pair unready"
    assert _served_cert(listening.port) == after, "expected the last good pair kept"


def runner_without_certificates(tmp_path: Path, cluster: Any) -> tuple[list[str], Path]:
    """The command line of a runner whose watch has a webhook and whose cert dir is empty."""
    role = tmp_path / "roles" / "noop"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text("---\n[]\n")
    (tmp_path / "watches.yaml").write_text(
        f"- group: {GADGET.group}\n  version: v1\n  kind: Gadget\n  role: {role}\n"
        f"  validation:\n    role: {role}\n"
    )
    missing = tmp_path / "no-certs"
    return [
        sys.executable,
        "-m",
        "runner",
        "run",
        "--watches-file=watches.yaml",
        f"--kubeconfig={cluster.kubeconfig}",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--custom-metrics-bind-address=0",
        f"--runner-dir={tmp_path / 'runner'}",
        f"--webhook-cert-dir={missing}",
        "--webhook-port=0",
    ], missing


def test_the_runner_stops_at_start_up_without_certificates(cluster: Any, tmp_path: Path) -> None:
    argv, missing = runner_without_certificates(tmp_path, cluster)
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        env={**os.environ, "ENABLE_WEBHOOKS": "true"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and str(missing) in done.stderr, (
        f"expected a start-up error naming {missing}; exit {done.returncode}: {done.stderr[-800:]}"
    )


def test_enable_webhooks_false_serves_none_and_needs_no_certificates(
    cluster: Any, tmp_path: Path
) -> None:
    argv, _ = runner_without_certificates(tmp_path, cluster)
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env={**os.environ, "ENABLE_WEBHOOKS": "false"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if "ENABLE_WEBHOOKS=false" in line or "Starting workers" in line:
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
    text = "".join(seen)
    assert "admission webhooks not served: ENABLE_WEBHOOKS=false" in text, (
        f"expected the runner to start without serving webhooks, saw: {text[-800:]}"
    )


# -- who may call, and what a flood costs ------------------------------------------------


@pytest.fixture
def pki(tmp_path: Path) -> devcerts.Pki:
    """The embedded cluster's PKI: its webhook client certificate and CA, and an admin
    certificate signed by another CA."""
    made = devcerts.Pki(tmp_path / "pki")
    devcerts.generate(made)
    return made


@pytest.fixture
def authenticated(
    certs: Path, counts: _Counts, pki: devcerts.Pki
) -> Iterator[server.WebhookServer]:
    served = server.WebhookServer(
        answerer=_Answerer(),
        port=0,
        cert_dir=certs,
        max_concurrent=2,
        observer=counts,
        host="127.0.0.1",
        client_ca=pki.webhook_client_ca,
    )
    served.start()
    yield served
    served.shutdown()


@pytest.mark.parametrize(
    "who", [pytest.param("none", id="no-certificate"), pytest.param("admin", id="other-ca")]
)
def test_a_caller_without_the_api_servers_certificate_gets_no_answer(
    authenticated: server.WebhookServer, counts: _Counts, pki: devcerts.Pki, who: str
) -> None:
    client = (pki.admin_cert, pki.admin_key) if who == "admin" else None
    with pytest.raises((ssl.SSLError, ConnectionError)):
        status, _ = _post(authenticated.port, PATH, _review(), client=client)
        pytest.fail(f"expected the handshake refused, saw an HTTP answer {status}")
    assert counts.done == [], f"expected no request served, saw {counts.done}"


def test_the_api_servers_certificate_is_answered(
    authenticated: server.WebhookServer, pki: devcerts.Pki
) -> None:
    client = (pki.webhook_client_cert, pki.webhook_client_key)
    status, body = _post(authenticated.port, PATH, _review(), client=client)
    assert status == 200, f"expected 200 for the API server's certificate, saw {status}: {body!r}"


def test_client_ca_crt_in_the_cert_dir_turns_client_authentication_on(
    certs: Path, pki: devcerts.Pki
) -> None:
    shutil.copy(pki.webhook_client_ca, certs / server.CLIENT_CA)
    served = server.WebhookServer(
        answerer=_Answerer(), port=0, cert_dir=certs, max_concurrent=1, host="127.0.0.1"
    )
    served.start()
    try:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _post(served.port, PATH, _review())
        client = (pki.webhook_client_cert, pki.webhook_client_key)
        assert _post(served.port, PATH, _review(), client=client)[0] == 200
    finally:
        served.shutdown()


def test_a_broken_client_ca_keeps_the_last_good_context(
    authenticated: server.WebhookServer, pki: devcerts.Pki
) -> None:
    pki.webhook_client_ca.write_text("not a certificate")
    assert not authenticated.reload(), "expected the broken CA refused"
    client = (pki.webhook_client_cert, pki.webhook_client_key)
    assert _post(authenticated.port, PATH, _review(), client=client)[0] == 200
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _post(authenticated.port, PATH, _review())


def _concurrently(count: int, post: Any) -> tuple[list[int], list[threading.Thread]]:
    statuses: list[int] = []

    def one() -> None:
        try:
            statuses.append(post()[0])
        except OSError:
            statuses.append(0)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    return statuses, threads


def _wait_for(what: str, condition: Any, *, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        threading.Event().wait(0.05)


def test_bodies_past_the_budget_are_refused_unread_and_the_rest_answered(
    listening: server.WebhookServer,
) -> None:
    answerer = listening._hooks
    assert isinstance(answerer, _Answerer)
    answerer.go.clear()
    body = _review() + b" " * (server.MAX_BODY - len(_review()) - 16)
    budget = server.MAX_BUFFERED // len(body)
    extra = 4
    statuses, threads = _concurrently(budget + extra, lambda: _post(listening.port, PATH, body))
    # A refusal is a 503 read from the head, or (the client still sending the body the
    # server will not read) a connection closed under it: 0 here.
    _wait_for(
        f"{extra} refusals while {budget} bodies are held",
        lambda: sum(s in (503, 0) for s in statuses) >= extra,
    )
    answerer.go.set()
    for thread in threads:
        thread.join(timeout=60)
    refused = [s for s in statuses if s != 200]
    assert statuses.count(200) == budget and len(refused) == extra, (
        f"expected {budget} bodies held and answered, {extra} refused; saw {sorted(statuses)}"
    )
    assert all(s in (503, 0) for s in refused), f"expected 503s or cut connections: {refused}"


def test_requests_past_the_waiting_bound_are_answered_429_at_once(
    certs: Path, counts: _Counts
) -> None:
    answerer = _Answerer()
    answerer.go.clear()
    served = server.WebhookServer(
        answerer=answerer, port=0, cert_dir=certs, max_concurrent=1, host="127.0.0.1"
    )
    served.start()
    try:
        held = served._server.limits.workers + (served._server.limits.max_pending or 0)
        statuses, threads = _concurrently(held + 4, lambda: _post(served.port, PATH, _review()))
        _wait_for("four 429s while every worker is held", lambda: statuses.count(429) >= 4)
        answerer.go.set()
        for thread in threads:
            thread.join(timeout=60)
        assert sorted(statuses) == [200] * held + [429] * 4, f"saw {sorted(statuses)}"
    finally:
        served.shutdown()


def test_the_deadline_is_the_api_servers_timeout_from_arrival(
    listening: server.WebhookServer,
) -> None:
    answerer = listening._hooks
    assert isinstance(answerer, _Answerer)
    _post(listening.port, PATH + "?timeout=3s", _review())
    _post(listening.port, PATH, _review())
    short, default = answerer.deadlines
    assert 2.0 < short <= 3.0, f"expected about 3 s left for ?timeout=3s, saw {short:.2f}"
    assert 9.0 < default <= 10.0, f"expected the hook's 10 s without a query, saw {default:.2f}"
