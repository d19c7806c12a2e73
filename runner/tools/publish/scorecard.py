"""``playbook-operator scorecard``: the bundle's scorecard tests, run without a cluster.

Outside the runtime flow (watch → queue → reconcile → ansible → status): a check of the
bundle ``make bundle`` wrote. ``operator-sdk scorecard`` starts one pod per test from the
scorecard-test image, which reads the bundle at ``/bundle`` and prints a JSON
``TestStatus``. Here the same binary (built static by
:mod:`~runner.tools.publish.gotools`) runs each test of ``bundle/tests/scorecard/config.yaml``
in a root directory of its own holding only itself and a copy of the bundle at
``/bundle`` (``chroot``; inside a user namespace when not root), and the results print as
operator-sdk prints them (``State: pass``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.tools.publish import documents
from runner.tools.publish.errors import PublishError, ToolError

CONFIG = "tests/scorecard/config.yaml"
RULE = "-" * 80


@dataclass(frozen=True)
class Test:
    """One test of the configuration: the image's ``entrypoint`` and its labels."""

    image: str
    entrypoint: tuple[str, ...]
    labels: Mapping[str, str]


@dataclass(frozen=True)
class Result:
    name: str
    state: str
    errors: tuple[str, ...]
    suggestions: tuple[str, ...]
    log: str


def tests(bundle: Path, *, selector: str = "") -> Iterator[Test]:
    """The tests of the bundle's scorecard configuration matching ``selector`` (k=v,...)."""
    path = bundle / CONFIG
    if not path.exists():
        raise PublishError(f"{path}: no scorecard configuration (config/scorecard, make bundle)")
    wanted = dict(p.split("=", 1) for p in selector.split(",") if "=" in p)
    for doc in documents.read_all(path):
        for stage in (doc or {}).get("stages") or []:
            for test in stage.get("tests") or []:
                labels = {str(k): str(v) for k, v in (test.get("labels") or {}).items()}
                if all(labels.get(k) == v for k, v in wanted.items()):
                    yield Test(
                        image=str(test.get("image", "")),
                        entrypoint=tuple(str(a) for a in test.get("entrypoint") or ()),
                        labels=labels,
                    )


def _which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolError(
            f"no {name} on PATH: the scorecard runs scorecard-test in a root of its own"
        )
    return found


def run_test(*, binary: Path, bundle: Path, test: Test) -> list[Result]:
    """Run one test's entrypoint with the bundle at ``/bundle``; its results."""
    with tempfile.TemporaryDirectory(prefix="scorecard-") as work:
        root = Path(work)
        shutil.copy(binary, root / "scorecard-test")
        shutil.copytree(bundle, root / "bundle", symlinks=False)
        (root / "tmp").mkdir()
        command = [_which("chroot"), str(root), "/scorecard-test", *test.entrypoint[1:]]
        if os.geteuid() != 0:
            command = [_which("unshare"), "--map-root-user", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, env={"HOME": "/tmp"}
        )
    try:
        status: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise ToolError(
            f"scorecard-test {' '.join(test.entrypoint[1:])} printed no result "
            f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}"
        ) from None
    return [
        Result(
            name=str(r.get("name", "")),
            state=str(r.get("state", "")),
            errors=tuple(r.get("errors") or ()),
            suggestions=tuple(r.get("suggestions") or ()),
            log=str(r.get("log") or ""),
        )
        for r in status.get("results") or []
    ]


def report(test: Test, results: list[Result]) -> str:
    """One test's results, as ``operator-sdk scorecard -o text`` prints them."""
    lines = [RULE, f"Image:      {test.image}", f"Entrypoint: [{' '.join(test.entrypoint)}]"]
    lines.append("Labels:")
    lines += [f'\t"{k}":"{v}"' for k, v in sorted(test.labels.items())]
    lines.append("Results:")
    for result in results:
        lines += [f"\tName: {result.name}", f"\tState: {result.state}", ""]
        if result.suggestions:
            lines += ["\tSuggestions:", *(f"\t\t{s}" for s in result.suggestions), ""]
        if result.errors:
            lines += ["\tErrors:", *(f"\t\t{e}" for e in result.errors), ""]
        if result.log.strip() and result.state != "pass":  # a passing test's log is noise
            lines += ["\tLog:", *(f"\t\t{line}" for line in result.log.splitlines()), ""]
    return "\n".join(lines)


def main(*, bundle: Path, binary: Path, selector: str) -> int:
    """Run the tests; 0 when every result passed, 1 otherwise."""
    if not binary.exists():
        raise ToolError(f"{binary}: no scorecard-test binary (make scorecard builds it)")
    chosen = list(tests(bundle, selector=selector))
    if not chosen:
        raise PublishError(f"{bundle / CONFIG}: no test matches {selector!r}")
    states: list[str] = []
    for test in chosen:
        results = run_test(binary=binary, bundle=bundle, test=test)
        states += [r.state for r in results]
        print(report(test, results), flush=True)
    passed = sum(s == "pass" for s in states)
    print(f"{passed}/{len(states)} scorecard tests passed", file=sys.stderr)
    return 0 if states and passed == len(states) else 1
