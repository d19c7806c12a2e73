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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from runner.base import errors
from runner.config import admission
from runner.kube.types import GVK
from runner.webhook import hooks, review, server
from tests.webhook.support import serving_cert

GADGET = GVK("webhook.test.example.com", "v1", "Gadget")
PATH = admission.path_for(admission.Kind.VALIDATION, GADGET)


class _Answerer:
    """Allows everything, with a warning naming the operation."""

    def __init__(self) -> None:
        hook = admission.Hook(
            kind=admission.Kind.VALIDATION, gvk=GADGET, role=None, playbook=Path("x"), vars={}
        )
        self.paths: Mapping[str, hooks.Served] = {
            PATH: hooks.Served(hook=hook, watch=None)  # type: ignore[arg-type]
        }

    def answer(self, served_hook: hooks.Served, request: review.Request) -> review.Verdict:
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


def _post(port: int, path: str, body: bytes, *, method: str = "POST") -> tuple[int, bytes]:
    context = ssl._create_unverified_context()
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
