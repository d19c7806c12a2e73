"""RunSpec checks and operator-sdk's --ansible-args quoting."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.ansible import launch, spec
from runner.config import sections


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param("'--tags only'", "--tags only", id="outer-single-quotes-stripped"),
        pytest.param("--tags only", "--tags only", id="unquoted-kept"),
        pytest.param("'--tags' 'only'", "--tags' 'only", id="only-the-outer-pair"),
        pytest.param('"--tags only"', '"--tags only"', id="double-quotes-kept"),
        pytest.param("'--check", "'--check", id="unbalanced-kept"),
        pytest.param("'", "'", id="lone-quote-kept"),
        pytest.param("''", "", id="empty-quoted"),
        pytest.param("", "", id="empty"),
    ],
)
def test_cmdline_outer_single_quotes_are_stripped(given: str, expected: str) -> None:
    assert launch.strip_quotes(given) == expected


@pytest.mark.parametrize(
    ("playbook", "role"),
    [
        pytest.param(None, None, id="neither"),
        pytest.param(Path("site.yml"), "greeter", id="both"),
    ],
)
def test_spec_needs_exactly_one_of_playbook_and_role(
    playbook: Path | None, role: str | None
) -> None:
    with pytest.raises(ValueError, match="exactly one of playbook and role"):
        spec.RunSpec(
            ident="a", private_data_dir=Path("/tmp/x"), extravars={}, playbook=playbook, role=role
        )


@pytest.mark.parametrize("ident", ["", "a/b", "latest", ".."])
def test_spec_ident_must_name_an_artifact_dir(ident: str) -> None:
    with pytest.raises(ValueError, match="ident"):
        spec.RunSpec(ident=ident, private_data_dir=Path("/tmp/x"), extravars={}, role="greeter")


def test_log_events_take_operator_sdk_flag_values() -> None:
    # operator-sdk's three, then ours (make run's default).
    assert [e.value for e in sections.LogEvents] == ["Tasks", "Everything", "Nothing", "Changes"]
