"""A flood of callers without the API server's certificate costs the runner nothing it
keeps: no body is read, its memory stays put, and the API server's own reviews are still
answered within their timeout."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

from testkit.helpers import unique_name, wait_for
from tests.webhook.support import Served

FLOOD = 150
BODY = 3 * 1024 * 1024
RSS_LIMIT_KIB = 300 * 1024


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def _unauthenticated(port: int, sent: list[int], done: threading.Event) -> None:
    """Open TLS without a client certificate and try to send a 3 MiB review."""
    context = ssl._create_unverified_context()
    head = (
        f"POST /validate-webhook-test-example-com-v1-gadget?timeout=10s HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {BODY}\r\n\r\n"
    ).encode()
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=20) as raw,
            context.wrap_socket(raw) as tls,
        ):
            tls.sendall(head)
            chunk = b" " * 65536
            for _ in range(BODY // len(chunk)):
                tls.sendall(chunk)
                sent.append(len(chunk))
            tls.recv(1)
    except OSError:
        pass  # refused at the handshake or cut off: what is expected
    finally:
        done.set()


def test_an_unauthenticated_flood_is_not_read_and_the_api_server_is_answered(
    served: Served,
) -> None:
    path = "/validate-webhook-test-example-com-v1-gadget"
    counted = served.operator.metric(
        "controller_runtime_webhook_latency_seconds_count", webhook=path
    )
    sent: list[int] = []
    finished = [threading.Event() for _ in range(FLOOD)]
    threads = [
        threading.Thread(target=_unauthenticated, args=(served.port, sent, done), daemon=True)
        for done in finished
    ]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    name = unique_name("flood")
    code, out = served.kubectl(served.manifest("Gadget", name, {"size": 99}), "--dry-run=server")
    answered = time.monotonic() - started
    assert code != 0 and "over the limit" in out, (
        f"expected the API server's review answered (denied by the role); saw ({code}): {out}"
    )
    assert answered < 15, f"the API server's review took {answered:.1f} s under the flood"
    wait_for(
        lambda: all(done.is_set() for done in finished),
        until=bool,
        describe="every unauthenticated caller cut off",
        timeout=120,
    )
    peak = _peak_rss_kib(served.operator.pid)
    assert peak < RSS_LIMIT_KIB, f"runner peak RSS {peak // 1024} MiB under the flood"
    # TLS 1.3 tells the client of a refused certificate after its handshake, so callers
    # write into the kernel's buffers until the reset; the runner reads none of it.
    served_now = served.operator.metric(
        "controller_runtime_webhook_latency_seconds_count", webhook=path
    )
    assert served_now == counted + 1, (
        f"expected only the API server's review served ({counted} + 1), saw {served_now}; "
        f"callers wrote {sum(sent) // 2**20} MiB before being cut off"
    )
