"""kubeconfig from outside: any document loads or fails with a ConfigLoadError, and inline
data is kept only where no other user can plant a file to be trusted."""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from runner.kube import config, errors
from testkit import hostile

CA = base64.b64encode(b"-----CA-----").decode()


def shaped() -> st.SearchStrategy[dict[str, Any]]:
    """Kubeconfig-shaped documents whose fields may hold anything."""
    anything = hostile.values(max_leaves=6)
    section = st.dictionaries(
        st.sampled_from(
            [
                "server",
                "certificate-authority-data",
                "token",
                "tokenFile",
                "client-key-data",
                "namespace",
                "cluster",
                "user",
                "insecure-skip-tls-verify",
            ]
        ),
        st.one_of(anything, st.just(CA), st.just("x")),
    )
    named = st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(["x", "c", "u"]),
                    "cluster": section,
                    "user": section,
                    "context": section,
                }
            ),
            anything,
        ),
        max_size=3,
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "current-context": st.one_of(st.just("x"), anything),
            "contexts": st.one_of(named, anything),
            "clusters": st.one_of(named, anything),
            "users": st.one_of(named, anything),
        },
    )


@given(doc=st.one_of(shaped(), hostile.values(max_leaves=6)))
def test_any_kubeconfig_loads_or_is_refused_with_a_config_error(doc: Any) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "kubeconfig"
        path.write_text(yaml.safe_dump(doc))
        with contextlib.suppress(errors.ConfigLoadError):
            config.from_kubeconfig(str(path))


def kubeconfig(tmp_path: Path) -> Path:
    doc = {
        "clusters": [
            {"name": "c", "cluster": {"server": "https://h", "certificate-authority-data": CA}}
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shared = tmp_path / "shared-tmp"
    shared.mkdir(mode=0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def test_a_planted_ca_with_the_expected_name_is_replaced_by_the_kubeconfigs(
    tmp_path: Path, shared_tmp: Path
) -> None:
    first = config.from_kubeconfig(str(kubeconfig(tmp_path)))
    assert first.ca_file is not None
    Path(first.ca_file).write_bytes(b"-----ATTACKER CA-----")
    again = config.from_kubeconfig(str(kubeconfig(tmp_path)))
    seen = Path(str(again.ca_file)).read_bytes()
    assert seen == b"-----CA-----", f"expected the kubeconfig's CA, the file holds {seen!r}"


def test_a_planted_symlink_is_not_followed(tmp_path: Path, shared_tmp: Path) -> None:
    first = config.from_kubeconfig(str(kubeconfig(tmp_path)))
    target = Path(str(first.ca_file))
    elsewhere = tmp_path / "attacker-ca"
    elsewhere.write_bytes(b"-----CA-----")
    target.unlink()
    target.symlink_to(elsewhere)
    again = config.from_kubeconfig(str(kubeconfig(tmp_path)))
    assert not Path(str(again.ca_file)).is_symlink(), "the planted link is still used"


def test_a_cache_dir_open_to_others_is_refused(tmp_path: Path, shared_tmp: Path) -> None:
    planted = shared_tmp / f"playbook-operator-{os.getuid()}"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    with pytest.raises(errors.ConfigLoadError, match="closed to others"):
        config.from_kubeconfig(str(kubeconfig(tmp_path)))


@pytest.mark.skipif(os.getuid() != 0, reason="making a directory of another user needs root")
def test_a_cache_dir_of_another_user_is_refused(tmp_path: Path, shared_tmp: Path) -> None:
    planted = shared_tmp / f"playbook-operator-{os.getuid()}"
    planted.mkdir(mode=0o700)
    os.chown(planted, 65534, 65534)
    with pytest.raises(errors.ConfigLoadError, match="closed to others"):
        config.from_kubeconfig(str(kubeconfig(tmp_path)))
