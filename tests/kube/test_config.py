"""kubeconfig loading: the parts the runtime supports, and clear errors otherwise."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from runner.kube import config, errors


def write(tmp_path: Path, *, user: dict[str, object], cluster: dict[str, object]) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443/", **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_inline_ca_and_token(tmp_path: Path) -> None:
    ca = base64.b64encode(b"-----CA-----").decode()
    path = write(tmp_path, user={"token": "t0k"}, cluster={"certificate-authority-data": ca})
    first = config.from_kubeconfig(str(path))
    again = config.from_kubeconfig(str(path))
    assert first.server == "https://127.0.0.1:6443"
    assert first.bearer_token() == "t0k"
    assert first.namespace == "ns"
    assert first.ca_file is not None and Path(first.ca_file).read_bytes() == b"-----CA-----"
    assert first.ca_file == again.ca_file, "loading twice must reuse the materialised file"
    assert oct(Path(first.ca_file).parent.stat().st_mode & 0o777) == "0o700"


def test_token_file_is_read_each_time(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    path = write(tmp_path, user={"tokenFile": "token"}, cluster={"insecure-skip-tls-verify": True})
    loaded = config.from_kubeconfig(str(path))
    assert loaded.insecure is True
    assert loaded.bearer_token() == "one"
    token.write_text("two\n")  # rotated on disk, as service-account tokens are
    assert loaded.bearer_token() == "two"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "current-context: nope\ncontexts: []\n", "context 'nope' not found", id="no-context"
        ),
        pytest.param("clusters: []\n", "no current-context", id="no-current-context"),
        pytest.param(":\n  - [", "cannot read kubeconfig", id="not-yaml"),
    ],
)
def test_bad_kubeconfig(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(errors.ConfigLoadError, match=expected):
        config.from_kubeconfig(str(path))
