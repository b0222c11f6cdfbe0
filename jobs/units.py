"""Parsing of human-written quantities in job.yaml: parameter counts and durations."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType

# Parameter-count suffixes. A size suffix is a COUNT multiplier, never bytes: "7b" is
# 7e9 parameters (Hugging Face model-card convention: Llama-2-7b, OPT-125m).
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*([kmbgt]?)\s*$", re.IGNORECASE)

DURATION_UNITS: Mapping[str, float] = MappingProxyType(
    {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
)
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|[smhdw])", re.IGNORECASE)


def parse_count(value: object) -> int:
    """`7b`, `7B`, `7e9`, `6.7B`, `1.3b`, `125m`, 7000000000 -> a parameter count."""
    if isinstance(value, bool):
        raise ValueError("expected a parameter count such as 7b, 125m or 7e9")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = round(value)
    elif isinstance(value, str):
        m = _COUNT_RE.match(value)
        if m is None:
            raise ValueError(
                f"{value!r} is not a parameter count: write e.g. 7b, 6.7B, 125m or 7e9"
            )
        mantissa, exp, suffix = m.groups()
        scale = _COUNT_SUFFIX[suffix.lower()] * (10 ** int(exp) if exp else 1)
        number = round(float(mantissa) * scale)
    else:
        raise ValueError("expected a parameter count such as 7b, 125m or 7e9")
    if number < 1:
        raise ValueError("must be a positive parameter count")
    return number


def parse_duration(value: object) -> timedelta:
    """`36h`, `90m`, `2d`, `1h30m`, or a number of seconds -> timedelta (> 0)."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ValueError("expected a duration such as 36h, 90m or 2d")
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        parsed = duration_seconds(value)
        if parsed is None:
            raise ValueError(f"{value!r} is not a duration: write e.g. 36h, 90m, 2d or 1h30m")
        seconds = parsed
    else:
        raise ValueError("expected a duration such as 36h, 90m or 2d")
    if not seconds > 0 or seconds > 366 * 86400 * 10:
        raise ValueError("must be a positive duration of at most 10 years")
    return timedelta(seconds=seconds)


def duration_seconds(text: str) -> float | None:
    """Seconds in `1h30m`, `20s`, `500ms`, `7d`, `2w` (or bare digits); None if malformed."""
    text = text.strip().replace(" ", "")
    if text.isdigit():
        return float(text)
    parts = _DURATION_RE.findall(text)
    if not parts or "".join(n + u for n, u in parts).lower() != text.lower():
        return None
    return sum(float(n) * DURATION_UNITS[u.lower()] for n, u in parts)
