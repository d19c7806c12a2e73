"""``make run``'s logs are readable: one new CR costs a few lines, no stack traces.

The operator runs with ``make run``'s logging flags (``--zap-devel``: console lines,
debug level, the ``Changes`` run log) and the Probe role; everything it writes on
standard error from the CR's creation until its run's ``reconciled`` line is counted.
Measured: 177 KB / 276 lines for a new Memcached before (every task's whole result,
a stack trace on Ansible's first deprecation warning), 11.8 KB / 78 lines after.
"""

from __future__ import annotations

import re
import urllib.request
from typing import Any

import pytest

from runner.kube.client import Client
from testkit.harness import OperatorProcess
from tests.runner import support
from tests.runner.support import PROBE, StartOperator, probe, probe_watches

pytestmark = pytest.mark.integration

MAX_LINES = 30
MAX_BYTES = 6_000
MAKE_RUN_FLAGS = ("--zap-devel", "--zap-encoder=console", "--log-level=debug")


class ConsoleOperator(OperatorProcess):
    """The harness' operator, reading console lines instead of JSON ones."""

    def logged(self, msg: str, **fields: Any) -> bool:
        return any(f": {msg}" in line for line in list(self.raw))

    def address(self, endpoint: str) -> str | None:
        for line in list(self.raw):
            found = re.search(rf"serving\s+endpoint={endpoint} address=(\S+)", line)
            if found:
                return found.group(1)
        return None

    def ready(self) -> bool:
        address = self.address("health")
        if address is None:
            return False
        try:
            with urllib.request.urlopen(f"http://{address}/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False


def test_one_new_cr_is_a_few_lines_without_stack_traces(
    kube: Client, namespace: str, start_operator: StartOperator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(support, "OperatorProcess", ConsoleOperator)
    operator = start_operator(probe_watches(), args=MAKE_RUN_FLAGS)
    before = len(operator.raw)
    kube.create(PROBE, probe("a", namespace, {"message": "hi"}), namespace=namespace)
    operator.eventually(
        lambda: [line for line in operator.raw[before:] if ": reconciled" in line],
        describe="the run's 'reconciled' line",
    )
    lines = operator.raw[before:]
    text = "\n".join(lines)
    size = len(text.encode())
    assert len(lines) <= MAX_LINES and size <= MAX_BYTES, (
        f"expected one new CR to log at most {MAX_LINES} lines / {MAX_BYTES} bytes at "
        f"make run's level, saw {len(lines)} lines / {size} bytes:\n{text[:3000]}"
    )
    for marker in ("Traceback", "Stack", 'File "'):
        assert marker not in text, f"expected no stack trace, saw {marker!r} in:\n{text[:3000]}"
    assert "trigger=created" in text, f"expected the run's lines to say why it ran:\n{text}"
