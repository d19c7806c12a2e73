"""parse_duration reads what Go's time.ParseDuration reads (cases from Go's own table)."""

from __future__ import annotations

import pytest

from runner.config import durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("0", 0.0, id="bare-zero"),
        pytest.param("-0", 0.0, id="negative-zero"),
        pytest.param("+0", 0.0, id="positive-zero"),
        pytest.param("5s", 5.0, id="seconds"),
        pytest.param("30s", 30.0, id="thirty-seconds"),
        pytest.param("1478s", 1478.0, id="many-seconds"),
        pytest.param("-5s", -5.0, id="negative"),
        pytest.param("+5s", 5.0, id="explicit-plus"),
        pytest.param("-0s", 0.0, id="negative-zero-seconds"),
        pytest.param("5.0s", 5.0, id="decimal"),
        pytest.param("5.6s", 5.6, id="fraction"),
        pytest.param("5.s", 5.0, id="trailing-dot"),
        pytest.param(".5s", 0.5, id="leading-dot"),
        pytest.param("1.004s", 1.004, id="millis-as-fraction"),
        pytest.param("100.00100s", 100.001, id="padded-fraction"),
        pytest.param("10ns", 10e-9, id="ns"),
        pytest.param("11us", 11e-6, id="us"),
        pytest.param("12µs", 12e-6, id="micro-sign"),
        pytest.param("12μs", 12e-6, id="greek-mu"),
        pytest.param("13ms", 0.013, id="ms"),
        pytest.param("500ms", 0.5, id="half-second"),
        pytest.param("15m", 900.0, id="minutes"),
        pytest.param("16h", 57600.0, id="hours"),
        pytest.param("1h2m", 3720.0, id="hours-minutes"),
        pytest.param("3h30m", 12600.0, id="three-and-a-half-hours"),
        pytest.param("10.5s4m", 250.5, id="units-in-any-order"),
        pytest.param("-2m3.4s", -123.4, id="negative-compound"),
        pytest.param("1h2m3s4ms5us6ns", 3723.004005006, id="every-unit"),
        pytest.param("39h9m14.425s", 140954.425, id="long-compound"),
        pytest.param("52763797000ns", 52.763797, id="large-ns"),
        pytest.param("0.3333333333333333333h", 1200.0, id="long-fraction"),
        pytest.param("9223372036854775807ns", 9223372036.854775807, id="largest"),
    ],
)
def test_valid(text: str, seconds: float) -> None:
    seen = durations.parse(text)

    assert seen == pytest.approx(seconds, rel=1e-12, abs=1e-15), (
        f"expected {text!r} = {seconds}s, saw {seen}s"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("", "invalid duration ''", id="empty"),
        pytest.param("3", "missing unit in duration '3'", id="no-unit"),
        pytest.param("-", "invalid duration '-'", id="sign-only"),
        pytest.param("s", "invalid duration 's'", id="unit-only"),
        pytest.param(".", "invalid duration '.'", id="dot-only"),
        pytest.param("-.", "invalid duration '-.'", id="signed-dot"),
        pytest.param(".s", "invalid duration '.s'", id="dot-unit"),
        pytest.param("+.s", "invalid duration '+.s'", id="signed-dot-unit"),
        pytest.param("1d", "unknown unit 'd' in duration '1d'", id="days"),
        pytest.param("1.5.5s", "missing unit in duration '1.5.5s'", id="two-dots"),
        pytest.param("1h 2m", "unknown unit 'h ' in duration '1h 2m'", id="space"),
        pytest.param("--5s", "invalid duration '--5s'", id="double-sign"),
        pytest.param("9223372036854775808ns", "out of range", id="overflow"),
        pytest.param("3000000h", "out of range", id="overflow-hours"),
    ],
)
def test_invalid(text: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        durations.parse(text)

    assert problem in str(caught.value), f"expected {problem!r} in {str(caught.value)!r}"
