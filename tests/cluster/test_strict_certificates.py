"""The embedded cluster's certificates pass strict X.509 verification, which Python
3.13's default TLS context applies (``VERIFY_X509_STRICT``): an operator image on Python
3.13 reaches the apiserver as ``kubernetes.default.svc`` / 10.0.0.1 from a pod, and a
host client on 3.13 as 127.0.0.1. Without key identifiers the handshake fails with
"Missing Subject Key Identifier" (the CA) or "Missing Authority Key Identifier".

A TLS handshake on loopback with a freshly generated PKI; needs no cluster.
"""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from devcluster import certs


def handshake(pki: certs.Pki, server_name: str) -> str:
    """Serve the apiserver's certificate on loopback; connect with strict checks."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(pki.server_cert, pki.server_key)
    client_context = ssl.create_default_context(cafile=str(pki.ca_cert))
    client_context.verify_flags |= ssl.VERIFY_X509_STRICT
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def accept() -> None:
            conn, _ = listener.accept()
            with conn, server_context.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5.0) as raw,
            client_context.wrap_socket(raw, server_hostname=server_name) as tls,
        ):
            answer = tls.recv(2).decode()
        thread.join(timeout=5.0)
    return answer


@pytest.mark.parametrize(
    "server_name",
    [
        pytest.param("kubernetes.default.svc", id="in-cluster-name"),
        pytest.param("10.0.0.1", id="cluster-ip"),
        pytest.param("127.0.0.1", id="loopback"),
    ],
)
def test_apiserver_certificate_passes_strict_verification(tmp_path: Path, server_name: str) -> None:
    pki = certs.Pki(tmp_path)
    certs.generate(pki)
    try:
        answer = handshake(pki, server_name)
    except ssl.SSLCertVerificationError as exc:
        pytest.fail(f"expected strict verification of {server_name} to pass, saw: {exc}")
    assert answer == "ok", f"expected the server's 'ok', saw {answer!r}"
