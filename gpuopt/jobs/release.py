"""``workload.framework_version``: a framework's release number as job.yaml gives it.

A release is one to three dot-separated whole numbers ("0.1", "0.1.1", "2024.12.4"),
written as a string. Each number is normalised as PEP 440 normalises a release segment
("All integers are interpreted via the int() built in and normalize to the string form
of the output", https://peps.python.org/pep-0440/#integer-normalization): "00.1" is
"0.1". A release the estimate does not know is estimated as the framework's current one
(only torchtune 0.1.x changes it: jobs/estimate/memory/load.py; docs/estimates.md).
"""

from __future__ import annotations

import re

# ASCII digits only (`\d` would take "١.٢"); at most three parts: major.minor.patch,
# the release segments torchtune (0.1.1), litgpt (0.4.13) and Unsloth's calendar
# releases (2024.12.4, pypi.org/project/unsloth/#history) use.
_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+){0,2}")
# Digits per part: calendar years have 4; 6 leaves room without taking a 10 KB string.
_MAX_DIGITS = 6
_EXAMPLE = 'e.g. "0.1" or "0.1.1"'


def parse_release(value: object) -> object:
    """The release normalised (a pydantic BeforeValidator); ValueError saying what to write."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"must be a release number in quotes, {_EXAMPLE}")
    if not isinstance(value, str):
        # YAML reads an unquoted 0.10 as the number 0.1: the release written is lost.
        raise ValueError(f"write the release in quotes, {_EXAMPLE}: YAML reads an unquoted "
                         "release as a number (0.10 becomes 0.1)")
    text = value.strip()
    if not text:
        raise ValueError(f"must not be empty: a release number, {_EXAMPLE}, or leave it out "
                         "for the current release")
    parts = text.split(".")
    if not _RELEASE.fullmatch(text) or any(len(p) > _MAX_DIGITS for p in parts):
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise ValueError(f"{shown!r} is not a release number: one to three whole numbers "
                         f"of up to {_MAX_DIGITS} digits joined by dots, {_EXAMPLE}")
    return ".".join(str(int(p)) for p in parts)
