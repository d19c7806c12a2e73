"""The self-signed key of --metrics-secure is written to disk for a moment (OpenSSL
loads files): created 0600, never readable by others, never chmod-ed after writing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from runner.operations import access
from tests.proxy.file_modes import watched


def test_the_self_signed_key_is_private_from_its_creation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the key is written
    with watched(tmp_path) as modes:
        access.server_context(None)
    keys = modes.of("tls.key")
    assert keys and all(seen == {0o600} for seen in keys.values()), (
        f"expected tls.key seen with mode 0600 only (umask 0), saw "
        f"{ {p: sorted(oct(m) for m in seen) for p, seen in keys.items()} }"
    )
    assert modes.chmods == [], (
        f"expected nothing chmod-ed after writing, saw {[(p, oct(m)) for p, m in modes.chmods]}"
    )
