"""Whatever a CR's run annotations say, the runner uses a value within its bounds and says
why when it is not the annotation's; only a non-duration period is an error (ValueError)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner.reconcile import overrides
from testkit import hostile

TEXT = st.one_of(st.none(), hostile.strings(), st.from_regex(r"\A[0-9]{0,30}\Z"))


@given(text=TEXT, default=st.integers(min_value=0, max_value=10))
def test_verbosity_stays_within_its_ceiling(text: str | None, default: int) -> None:
    got = overrides.verbosity(text, default=default)
    assert 0 <= got.value <= max(overrides.MAX_VERBOSITY, default), got


@given(text=TEXT, default=st.integers(min_value=1, max_value=100))
def test_artifacts_stay_between_one_and_the_watchs_count(text: str | None, default: int) -> None:
    got = overrides.max_artifacts(text, default=default)
    assert 1 <= got.value <= default, got


@given(text=TEXT, default=st.floats(min_value=0, max_value=86400))
def test_a_period_is_a_duration_above_the_floor_or_an_error(
    text: str | None, default: float
) -> None:
    try:
        got = overrides.reconcile_period(text, default=default)
    except ValueError:
        return
    assert got.value == 0 or got.value >= min(overrides.MIN_RECONCILE_PERIOD, default or 1), got
