"""How old the embedded price snapshot is, said wherever its prices are used.

The clock is passed in (``now``), so tests fix the age; the commands pass the real time.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

REFRESH_HINT = "run `gpuopt prices refresh`"


def age_days(as_of: date, now: datetime) -> int:
    """Whole days from the snapshot's date to ``now`` (UTC), never negative."""
    return max(0, (now.astimezone(UTC).date() - as_of).days)


def _old(days: int) -> str:
    return "today" if days == 0 else f"{days} day{'s' if days != 1 else ''} old"


def snapshot_note(as_of: date, now: datetime, newest: date | None = None) -> str:
    """'prices as of 2025-06-01, 548 days old: run `gpuopt prices refresh`'; with
    ``newest`` (each price dated by its own source) the range of dates and ages."""
    if newest is None or newest == as_of:
        return f"prices as of {as_of}, {_old(age_days(as_of, now))}: {REFRESH_HINT}"
    return (f"prices as of {as_of} to {newest}, each dated by its source, "
            f"{age_days(as_of, now)} to {age_days(newest, now)} days old: {REFRESH_HINT}")


def prices_source(source: str, as_of: date | None, now: datetime | None = None,
                  newest: date | None = None) -> str:
    """What a table's prices come from, for its title."""
    if source != "snapshot" or as_of is None:
        return "latest polled prices"
    return f"embedded snapshot: {snapshot_note(as_of, now or datetime.now(UTC), newest)}"
