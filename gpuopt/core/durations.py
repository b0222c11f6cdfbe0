"""Durations as people write them: ``36h``, ``90m``, ``1h30m``, ``20s``, ``500ms``,
``7d``, ``2w``, or a number of seconds -- one parser, with options for the rules that
differ between a job file and the configuration."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType

DURATION_UNITS: Mapping[str, float] = MappingProxyType(
    {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
)
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|[smhdw])", re.IGNORECASE)
TEN_YEARS = timedelta(days=3660)
JOB_EXAMPLES = "36h, 90m, 2d or 1h30m"


def duration_seconds(text: str) -> float | None:
    """Seconds in `1h30m`, `20s`, `500ms`, `7d`, `2w` (or bare digits); None if malformed."""
    text = text.strip().replace(" ", "")
    if text.isdigit():
        return float(text)
    parts = _DURATION_RE.findall(text)
    if not parts or "".join(n + u for n, u in parts).lower() != text.lower():
        return None
    return sum(float(n) * DURATION_UNITS[u.lower()] for n, u in parts)


def parse_duration(
    value: object,
    *,
    positive: bool = True,
    at_most: timedelta | None = TEN_YEARS,
    examples: str = JOB_EXAMPLES,
) -> timedelta:
    """A written duration, a number of seconds or a timedelta -> timedelta.

    ``positive``: reject zero and negative durations; ``at_most``: reject longer ones
    (None = no bound). The defaults are a job file's rules (a deadline or an interval
    is > 0 and at most 10 years); the configuration parses with ``positive=False,
    at_most=None`` and checks each setting's own range. ``examples`` ends the message
    of a malformed value. ValueError says what is wrong.
    """
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, bool):
        raise ValueError(f"expected a duration such as {examples}")
    elif isinstance(value, int | float):
        result = _timedelta(float(value), at_most)
    elif isinstance(value, str):
        seconds = duration_seconds(value)
        if seconds is None:
            raise ValueError(f"{value!r} is not a duration: write e.g. {examples}")
        result = _timedelta(seconds, at_most)
    else:
        raise ValueError(f"expected a duration such as {examples}")
    if positive and not result > timedelta(0):
        raise ValueError(_range_message(at_most))
    if at_most is not None and result > at_most:
        raise ValueError(_range_message(at_most) if positive else
                         f"must be at most {format_duration(at_most)}")
    return result


def _timedelta(seconds: float, at_most: timedelta | None) -> timedelta:
    """timedelta(seconds=...) with NaN, infinity and overflow as a ValueError."""
    try:
        return timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        raise ValueError(_range_message(at_most)) from None


def _range_message(at_most: timedelta | None) -> str:
    if at_most == TEN_YEARS:
        return "must be a positive duration of at most 10 years"
    if at_most is None:
        return "must be a positive duration"
    return f"must be a positive duration of at most {format_duration(at_most)}"


def format_duration(value: timedelta) -> str:
    """timedelta -> the shortest "1h30m" form (inverse of parse_duration)."""
    seconds = value.total_seconds()
    if seconds == 0:
        return "0s"
    out = []
    for unit in ("d", "h", "m", "s"):
        size = DURATION_UNITS[unit]
        count, seconds = divmod(seconds, size)
        if count:
            out.append(f"{int(count)}{unit}")
    if seconds:
        out.append(f"{round(seconds * 1000)}ms")
    return "".join(out)
