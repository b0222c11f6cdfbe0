"""Parsing of human-written parameter counts in job.yaml (durations: gpuopt.core.durations)."""

from __future__ import annotations

import re

# Parameter-count suffixes. A size suffix is a COUNT multiplier, never bytes: "7b" is
# 7e9 parameters (Hugging Face model-card convention: Llama-2-7b, OPT-125m).
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*([kmbgt]?)\s*$", re.IGNORECASE)



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
