"""One duration parser, with the job file's rules and the configuration's as options."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from gpuopt.core.durations import format_duration, parse_duration

CONFIG = {"positive": False, "at_most": None, "examples": "'20s', '10m'"}


@pytest.mark.parametrize(("text", "seconds"), [
    ("36h", 36 * 3600), ("90m", 5400), ("1h30m", 5400), ("20s", 20), ("500ms", 0.5),
    ("2w", 14 * 86400), ("7D", 7 * 86400), (" 1h 30m ", 5400), ("45", 45),
])
def test_both_rule_sets_read_the_same_written_forms(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert parse_duration(text, **CONFIG) == timedelta(seconds=seconds)  # type: ignore[arg-type]


def test_job_rules_want_a_positive_duration_of_at_most_ten_years() -> None:
    for bad in ("0s", 0, -5, 3661 * 86400, math.nan, math.inf, 1e300, "9999999999999d"):
        with pytest.raises(ValueError, match="positive duration of at most 10 years"):
            parse_duration(bad)
    assert parse_duration(3660 * 86400) == timedelta(days=3660)
    with pytest.raises(ValueError, match=r"'3x' is not a duration: write e.g. 36h"):
        parse_duration("3x")
    for wrong_type in (True, None, [1]):
        with pytest.raises(ValueError, match="expected a duration such as 36h"):
            parse_duration(wrong_type)


def test_config_rules_leave_the_range_to_each_setting() -> None:
    assert parse_duration("0s", **CONFIG) == timedelta(0)  # type: ignore[arg-type]
    assert parse_duration(-5, **CONFIG) == timedelta(seconds=-5)  # type: ignore[arg-type]
    assert parse_duration("5000w", **CONFIG) == timedelta(weeks=5000)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'3x' is not a duration: write e.g. '20s', '10m'"):
        parse_duration("3x", **CONFIG)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive duration"):
        parse_duration(math.inf, **CONFIG)  # type: ignore[arg-type]


def test_at_most_bounds_and_format_inverts() -> None:
    with pytest.raises(ValueError, match="at most 1h"):
        parse_duration("2h", at_most=timedelta(hours=1))
    for text in ("1h30m", "7d", "20s", "1d2h3m4s500ms"):
        assert format_duration(parse_duration(text)) == text
    assert format_duration(timedelta(0)) == "0s"
