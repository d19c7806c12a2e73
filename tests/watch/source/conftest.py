"""An informer on the stand-in API server (stub_api.py), run in a thread until the test ends."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runner.watch import source
from tests.watch.source.stub_api import PROBE, StubApi

RunInformer = Callable[..., source.Informer]


@pytest.fixture
def run_informer() -> Iterator[RunInformer]:
    stop = threading.Event()

    def run(api: StubApi, handler: source.Handler, **kwargs: Any) -> source.Informer:
        informer = source.Informer(
            client=api.client(),
            resource=PROBE,
            namespace="ns",
            handler=handler,
            log=logging.getLogger("tests.watch.source"),
            **kwargs,
        )
        threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
        return informer

    yield run
    stop.set()
