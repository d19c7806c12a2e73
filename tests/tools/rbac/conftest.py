"""The rbac command tests' terminal: a real pty, so ``--grant-denied`` has someone to ask."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TextIO

import pytest


@pytest.fixture
def terminal() -> Iterator[tuple[TextIO, int]]:
    """A pty: the reader the command asks on, and the other end answers are written to."""
    controller, device = os.openpty()
    reader = open(device, encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        yield reader, controller
    finally:
        reader.close()
        os.close(controller)
