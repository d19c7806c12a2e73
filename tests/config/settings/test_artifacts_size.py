"""--max-runner-artifacts-size: a quantity, into the ansible section; a bad one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.settings_from import build, one_watch


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param((), 1 << 30, id="default-1Gi"),
        pytest.param(("--max-runner-artifacts-size=512Mi",), 512 << 20, id="binary-suffix"),
        pytest.param(("--max-runner-artifacts-size=2G",), 2 * 10**9, id="decimal-suffix"),
        pytest.param(("--max-runner-artifacts-size=1048576",), 1 << 20, id="bytes"),
        pytest.param(("--max-runner-artifacts-size=0",), 0, id="no-cap"),
    ],
)
def test_the_cap_lands_in_the_ansible_section(
    tmp_path: Path, flags: tuple[str, ...], expected: int
) -> None:
    found = build(one_watch(tmp_path), *flags).ansible.artifacts_max_bytes
    assert found == expected, f"{flags or 'no flag'}: expected {expected} bytes, saw {found}"


@pytest.mark.parametrize("value", ["1x", "Gi", "-1Gi", "1.5.2Mi"])
def test_a_bad_size_is_refused_naming_the_flag(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build(one_watch(tmp_path), f"--max-runner-artifacts-size={value}")
    err = capsys.readouterr().err
    assert stopped.value.code == 2, f"expected exit 2 for {value!r}, saw {stopped.value.code}"
    assert "--max-runner-artifacts-size" in err and "not a size" in err, err
