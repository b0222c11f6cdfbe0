"""ISO weeks in a time zone: parsing "2026-W48", UTC bounds and local day boundaries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from gpuopt.core.errors import UserError

_WEEK = re.compile(r"^\s*(\d{4})-?[Ww](\d{1,2})\s*$")


@dataclass(frozen=True, slots=True, order=True)
class IsoWeek:
    year: int
    week: int

    def __post_init__(self) -> None:
        try:
            date.fromisocalendar(self.year, self.week, 1)
        except ValueError:
            raise UserError(f"{self.year}-W{self.week:02d} is not an ISO week") from None

    @classmethod
    def parse(cls, text: str) -> IsoWeek:
        m = _WEEK.match(text)
        if not m:
            raise UserError(f"{text!r} is not an ISO week: write it like 2026-W48")
        return cls(int(m.group(1)), int(m.group(2)))

    @classmethod
    def containing(cls, moment: datetime, tz: ZoneInfo) -> IsoWeek:
        year, week, _ = moment.astimezone(tz).isocalendar()
        return cls(year, week)

    @classmethod
    def of_date(cls, day: date) -> IsoWeek:
        year, week, _ = day.isocalendar()
        return cls(year, week)

    def __str__(self) -> str:
        return f"{self.year}-W{self.week:02d}"

    @property
    def monday(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)

    def days(self) -> tuple[date, ...]:
        return tuple(self.monday + timedelta(days=i) for i in range(7))

    def previous(self) -> IsoWeek:
        return IsoWeek.of_date(self.monday - timedelta(days=7))

    def next(self) -> IsoWeek:
        return IsoWeek.of_date(self.monday + timedelta(days=7))

    def bounds(self, tz: ZoneInfo) -> tuple[datetime, datetime]:
        """[start, end) of the week in ``tz`` (local midnights), as aware UTC datetimes."""
        return local_midnight(self.monday, tz), local_midnight(self.monday + timedelta(days=7), tz)

    def day_bounds(self, tz: ZoneInfo) -> tuple[tuple[date, datetime, datetime], ...]:
        """(local date, start UTC, end UTC) for each of the seven days; DST days are 23/25 h."""
        out = []
        for day in self.days():
            out.append((day, local_midnight(day, tz), local_midnight(day + timedelta(days=1), tz)))
        return tuple(out)


def local_midnight(day: date, tz: ZoneInfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=tz).astimezone(UTC)
