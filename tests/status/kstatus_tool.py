"""The kstatus test helper (hack/kstatus): the status Flux and Argo CD compute for objects.

Built into bin/kstatus on demand (hack/kstatus/build.sh, from the Go module proxy), then
fed the objects as JSON: the answer is sigs.k8s.io/cli-utils' own verdict, not ours.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "hack" / "kstatus" / "build.sh"
BINARY = ROOT / "bin" / "kstatus"


def binary() -> Path:
    """bin/kstatus, built first when missing or older than its source."""
    done = subprocess.run([str(BUILD)], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"expected hack/kstatus/build.sh to build, saw {done.stderr}"
    return BINARY


def compute(obj: dict[str, Any]) -> dict[str, str]:
    """kstatus' verdict on ``obj``: ``status`` (InProgress, Current, Failed, Terminating…)
    and ``message``."""
    done = subprocess.run(
        [str(binary())],
        input=json.dumps(obj),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"expected a kstatus verdict, saw {done.stderr}"
    verdict: dict[str, str] = json.loads(done.stdout.splitlines()[0])
    return verdict
