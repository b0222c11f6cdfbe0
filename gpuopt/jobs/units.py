"""Parsing of human-written counts in job.yaml -- parameters, tokens -- (durations:
gpuopt.core.durations)."""

from __future__ import annotations

import math
import re
from decimal import Decimal

# Parameter-count suffixes. A size suffix is a COUNT multiplier, never bytes: "7b" is
# 7e9 parameters (Hugging Face model-card convention: Llama-2-7b, OPT-125m).
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12,
                 "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
# The largest count accepted (parameters, tokens): 10^18 is far beyond any model or
# dataset and fits the store's 64-bit integers; the estimates stay finite floats.
MAX_COUNT = 10**18
_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*"
                       r"(thousand|million|billion|trillion|[kmbgt]?)\s*$", re.IGNORECASE)
# What a count is of, and examples of writing one, for the error messages.
_EXAMPLES = {"parameter count": "7b, 6.7B, 125m or 7e9",
             "token count": "120m, 2b, 200 million or 5e8"}



def parse_count(value: object, what: str = "parameter count") -> int:
    """`7b`, `7B`, `7e9`, `6.7B`, `1.3b`, `125m`, `200 million`, 7000000000 -> a count
    (``what``: "parameter count" or "token count", for the messages)."""
    examples = _EXAMPLES.get(what, _EXAMPLES["parameter count"])
    if isinstance(value, bool):
        raise ValueError(f"expected a {what} such as {examples}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"must be a finite count, at most {MAX_COUNT:.0e}")
        number = round(min(value, float(MAX_COUNT) * 2))
    elif isinstance(value, str):
        m = _COUNT_RE.match(value)
        if m is None:
            raise ValueError(f"{value!r} is not a {what}: write e.g. {examples}")
        mantissa, exp, suffix = m.groups()
        if exp and len(exp.lstrip("0")) > 2:  # 1e999: far beyond MAX_COUNT, never computed
            raise ValueError(f"must be at most {MAX_COUNT:.0e}")
        scale = _COUNT_SUFFIX[suffix.lower()] * (10 ** int(exp) if exp else 1)
        number = round(Decimal(mantissa) * scale)
    else:
        raise ValueError(f"expected a {what} such as {examples}")
    if number > MAX_COUNT:
        raise ValueError(f"must be at most {MAX_COUNT:.0e}")
    if number < 1:
        raise ValueError(f"must be a positive {what}")
    return number
