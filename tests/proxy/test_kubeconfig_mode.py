"""A run's kubeconfig holds a live token to the proxy: it is created 0600 in a 0700
directory, whatever the umask, and never chmod-ed after it was written."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from runner.proxy import sessions
from tests.proxy.file_modes import watched

OWNER = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "owner", "namespace": "default", "uid": "u-1"},
}


def test_a_runs_kubeconfig_is_never_readable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the sessions' dir goes
    with watched(tmp_path) as modes:
        runs = sessions.Sessions()
        try:
            with runs.open(OWNER, server="http://127.0.0.1:1") as env:
                kubeconfig = Path(env["KUBECONFIG"])
                assert kubeconfig.read_text(), "expected a kubeconfig written"
        finally:
            runs.close()
    files = {p: m for p, m in modes.seen.items() if p.endswith(".kubeconfig")}
    dirs = {p: m for p, m in modes.seen.items() if Path(p).name.startswith("playbook-operator-")}
    assert files and all(m == {0o600} for m in files.values()), (
        f"expected the kubeconfig seen with mode 0600 only (umask 0), saw "
        f"{ {p: sorted(oct(x) for x in m) for p, m in files.items()} }"
    )
    assert dirs and all(m == {0o700} for m in dirs.values()), (
        f"expected its directory seen with mode 0700 only, saw "
        f"{ {p: sorted(oct(x) for x in m) for p, m in dirs.items()} }"
    )
    assert modes.chmods == [], (
        f"expected nothing chmod-ed after creation, saw {[(p, oct(m)) for p, m in modes.chmods]}"
    )
