"""A proxied request whose API server stops answering ends instead of holding its task forever.

Non-stream requests get a read timeout (``runner.proxy.handler.READ_TIMEOUT``); a watch
keeps none, because it ends with its run instead. The stand-in API server answers
nothing until the test releases it, as a frozen connection would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from runner import proxy
from runner.proxy import handler
from tests.proxy.stand_in import OWNER, Answer, StandIn, raw, stand_in_proxy
from tests.proxy.support import server_and_token

TIMEOUT = 0.5  # the read timeout under test, instead of the minute it is in production


@pytest.fixture
def silent_api(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[proxy.OwnerProxy, threading.Event]]:
    monkeypatch.setattr(handler, "READ_TIMEOUT", TIMEOUT)
    release = threading.Event()

    def answer(target: str) -> Answer:
        if "/configmaps" in target:  # discovery answers; the request under test does not
            release.wait(30)  # a frozen API server: nothing comes back
        return Answer()

    try:
        yield from ((server, release) for server in stand_in_proxy(StandIn(answer=answer)))
    finally:
        release.set()


def test_a_silent_api_server_ends_a_plain_request(
    silent_api: tuple[proxy.OwnerProxy, threading.Event],
) -> None:
    server, _ = silent_api
    with server.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        started = time.monotonic()
        answer = raw(
            server.port,
            f"GET /runs/{token}/api/v1/namespaces/ns/configmaps HTTP/1.1\r\n"
            "Host: x\r\n\r\n".encode(),
            timeout=20,
        )
        answer.read()
        took = time.monotonic() - started
    assert answer.status == 503, f"expected 503 once the API server was silent, saw {answer.status}"
    assert took < 10, f"expected the request to end about {TIMEOUT}s in, it took {took:.1f}s"


def test_a_watch_keeps_no_read_timeout(
    silent_api: tuple[proxy.OwnerProxy, threading.Event],
) -> None:
    server, release = silent_api
    with server.for_owner(OWNER) as env:
        _, token = server_and_token(env["KUBECONFIG"])
        done: list[int] = []

        def watch() -> None:
            answer = raw(
                server.port,
                f"GET /runs/{token}/api/v1/namespaces/ns/configmaps?watch=true HTTP/1.1\r\n"
                "Host: x\r\n\r\n".encode(),
                timeout=20,
            )
            answer.read()
            done.append(answer.status)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        thread.join(timeout=TIMEOUT * 6)
        still_open = thread.is_alive()
        release.set()
        thread.join(timeout=10)
    assert still_open, f"expected the watch to stay open past {TIMEOUT}s, it ended: {done}"
    assert done == [200], f"expected the watch's answer once the API server spoke, saw {done}"
