"""Parsing of human-written parameter counts in job.yaml (durations: gpuopt.core.durations)."""

from __future__ import annotations

import math
import re
from decimal import Decimal

# Parameter-count suffixes. A size suffix is a COUNT multiplier, never bytes: "7b" is
# 7e9 parameters (Hugging Face model-card convention: Llama-2-7b, OPT-125m).
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
# The largest count accepted (parameters, tokens): 10^18 is far beyond any model or
# dataset and fits the store's 64-bit integers; the estimates stay finite floats.
MAX_COUNT = 10**18
_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*([kmbgt]?)\s*$", re.IGNORECASE)



def parse_count(value: object) -> int:
    """`7b`, `7B`, `7e9`, `6.7B`, `1.3b`, `125m`, 7000000000 -> a parameter count."""
    if isinstance(value, bool):
        raise ValueError("expected a parameter count such as 7b, 125m or 7e9")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"must be a finite count, at most {MAX_COUNT:.0e}")
        number = round(min(value, float(MAX_COUNT) * 2))
    elif isinstance(value, str):
        m = _COUNT_RE.match(value)
        if m is None:
            raise ValueError(
                f"{value!r} is not a parameter count: write e.g. 7b, 6.7B, 125m or 7e9"
            )
        mantissa, exp, suffix = m.groups()
        if exp and len(exp.lstrip("0")) > 2:  # 1e999: far beyond MAX_COUNT, never computed
            raise ValueError(f"must be at most {MAX_COUNT:.0e}")
        scale = _COUNT_SUFFIX[suffix.lower()] * (10 ** int(exp) if exp else 1)
        number = round(Decimal(mantissa) * scale)
    else:
        raise ValueError("expected a parameter count such as 7b, 125m or 7e9")
    if number > MAX_COUNT:
        raise ValueError(f"must be at most {MAX_COUNT:.0e}")
    if number < 1:
        raise ValueError("must be a positive parameter count")
    return number
