"""A watch that goes silent is taken for a dead connection and resumed; a quiet one is not.

The API server sends a bookmark on a quiet watch about once a minute, so a watch that
says nothing for longer than :data:`runner.watch.stream.SILENCE_SECONDS` has lost
its connection (half-open TCP, a stuck proxy). Against the stand-in API server
(stub_api.py), which answers a watch with its head and then says nothing more (or only
bookmarks), with the bound shortened to :data:`SILENCE`.
"""

from __future__ import annotations

import logging

import pytest

from runner.watch import stream
from testkit.helpers import wait_for
from tests.watch.source.conftest import RunInformer
from tests.watch.source.stub_api import Seen, StubApi, line, listing, obj

SILENCE = 1.0  # seconds: the informers' silence bound in these tests


def test_the_silence_bound_notices_a_dead_watch_within_90_seconds() -> None:
    bound = stream.SILENCE_SECONDS
    # Above the API server's bookmark period (a minute), or every healthy watch is cut.
    assert 60 < bound <= 90, f"expected a silence bound in (60, 90] s, saw {bound}"


def test_a_silent_watch_is_resumed_from_its_resource_version(
    run_informer: RunInformer, caplog: pytest.LogCaptureFixture
) -> None:
    body = listing(obj("a", "5"), rv="10")
    # The first watch from 10 says nothing after its head; the one resumed from 10 sends b.
    resumed = {"10": [line("ADDED", obj("b", "11"))]}
    with StubApi(list_body=body, watches={"10": []}, rewatches=resumed) as api:
        seen = Seen()
        with caplog.at_level(logging.DEBUG, logger="tests.watch.source"):
            run_informer(api, seen, silence=SILENCE)
            wait_for(
                seen.names,
                until=lambda n: "b" in n,
                describe=f"b, sent on the watch resumed after {SILENCE:g} s of silence",
                timeout=10,
            )
        assert seen.names() == ["a", "b"], f"expected the handler to see a, b; saw {seen.names()}"
        assert api.watch_versions[:2] == ["10", "10"], (
            f"expected two watches from 10, saw watches from {api.watch_versions}"
        )
        assert api.lists == 1, f"expected one LIST (a resume, not a relist), saw {api.lists}"

    silent = [r for r in caplog.records if r.getMessage().startswith("watch silent")]
    assert silent, f"expected a 'watch silent' log, saw {[r.getMessage() for r in caplog.records]}"
    first = silent[0]
    fields = (first.levelno, first.__dict__["resourceVersion"])
    assert fields == (logging.INFO, "10"), f"expected (INFO, rv 10), saw {fields}"
    assert first.__dict__["silent_seconds"] >= SILENCE, (
        f"expected silent_seconds >= {SILENCE}, saw {first.__dict__['silent_seconds']}"
    )
    # A dead connection is no server in trouble: neither a warning nor the backoff path.
    louder = [
        f"{r.levelname}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.WARNING or r.getMessage().startswith("watch interrupted")
    ]
    assert not louder, f"expected no warning and no backoff after a silence, saw {louder}"


def test_a_watch_that_sends_only_bookmarks_is_not_resumed(run_informer: RunInformer) -> None:
    every = SILENCE / 5
    with StubApi(list_body=listing(rv="10"), watches={"10": []}, bookmark_every=every) as api:
        informer = run_informer(api, Seen(), silence=SILENCE)
        sent = wait_for(
            lambda: api.bookmarks_sent,
            until=lambda n: n >= 20,
            describe=f"20 bookmarks, one every {every:g} s (4 silence bounds)",
            timeout=15,
        )
        assert api.watch_versions == ["10"], (
            f"expected the one watch from 10 to stay open through {sent} bookmarks, "
            f"saw watches from {api.watch_versions}"
        )
        assert informer.synced.is_set()
