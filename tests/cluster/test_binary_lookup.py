"""Binaries are found the way envtest finds them: TEST_ASSET_<NAME>, then
$KUBEBUILDER_ASSETS/<name>, then our own build directory (unit tests, no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

import devcluster
from devcluster import binaries


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("name", "env_keys", "expected"),
    [
        pytest.param(
            "kube-apiserver",
            {"TEST_ASSET_KUBE_APISERVER", "KUBEBUILDER_ASSETS"},
            "explicit",
            id="test-asset-wins-over-kubebuilder-assets",
        ),
        pytest.param(
            "etcd", {"KUBEBUILDER_ASSETS"}, "assets", id="kubebuilder-assets-wins-over-ours"
        ),
        pytest.param(
            "kube-scheduler",
            {"KUBEBUILDER_ASSETS"},
            "ours",
            id="missing-from-assets-falls-back-to-ours",
        ),
        pytest.param("kwok", set(), "ours", id="no-override-uses-ours"),
    ],
)
def test_lookup_order(tmp_path: Path, name: str, env_keys: set[str], expected: str) -> None:
    ours = tmp_path / "ours"
    candidates = {
        "explicit": executable(tmp_path / "explicit" / name),
        "ours": executable(ours / name),
    }
    assets = tmp_path / "assets"
    if name != "kube-scheduler":  # envtest's tarball has no scheduler
        candidates["assets"] = executable(assets / name)
    environ = {
        key: str(candidates["explicit"] if key.startswith("TEST_ASSET_") else assets)
        for key in env_keys
    }

    seen = binaries.resolve(name, bin_dir=ours, environ=environ)

    assert seen == candidates[expected], f"expected the {expected} binary, saw {seen}"


def test_missing_binary_names_every_place_looked(tmp_path: Path) -> None:
    with pytest.raises(devcluster.BinaryNotFoundError) as raised:
        binaries.resolve("kubectl", bin_dir=tmp_path, environ={})

    message = str(raised.value)
    for place in ("$TEST_ASSET_KUBECTL", "$KUBEBUILDER_ASSETS/kubectl", str(tmp_path)):
        assert place in message, f"expected {place!r} in the error, saw {message!r}"
