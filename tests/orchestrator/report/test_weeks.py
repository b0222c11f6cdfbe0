from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.report.weeks import IsoWeek

LA = ZoneInfo("America/Los_Angeles")


def test_parse_and_print() -> None:
    assert IsoWeek.parse("2026-W48") == IsoWeek(2026, 48)
    assert IsoWeek.parse("2026w05") == IsoWeek(2026, 5)
    assert str(IsoWeek(2026, 5)) == "2026-W05"
    assert IsoWeek(2026, 1).previous() == IsoWeek(2025, 52)


@pytest.mark.parametrize("text", ["2026-48", "W48", "2026-W54", "2026-W00", "tomorrow"])
def test_bad_weeks_are_user_errors(text: str) -> None:
    with pytest.raises(UserError, match="ISO week"):
        IsoWeek.parse(text)


def test_year_boundaries() -> None:
    # 2026-W53 exists (2026 starts on a Thursday); 2027-W01 starts on Mon 4 Jan 2027.
    assert IsoWeek(2027, 1).previous() == IsoWeek(2026, 53)
    assert IsoWeek(2026, 53).next() == IsoWeek(2027, 1)
    assert IsoWeek.containing(datetime(2027, 1, 3, 12, tzinfo=UTC), ZoneInfo("UTC")) == IsoWeek(
        2026, 53
    )


def test_bounds_in_a_zone_and_a_dst_day() -> None:
    start, end = IsoWeek(2026, 48).bounds(LA)
    assert start == datetime(2026, 11, 23, 8, tzinfo=UTC)
    assert end == datetime(2026, 11, 30, 8, tzinfo=UTC)
    # W44 holds Sun 1 Nov 2026, when Los Angeles goes back from PDT to PST: a 25-hour day.
    days = IsoWeek(2026, 44).day_bounds(LA)
    lengths = [(e - s).total_seconds() / 3600 for _, s, e in days]
    assert lengths == [24] * 6 + [25]
    assert days[0][1] == datetime(2026, 10, 26, 7, tzinfo=UTC)
