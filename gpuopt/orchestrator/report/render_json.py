"""JSON rendering with stable keys and exact figures.

Format (``"schema": "gpuopt.weekly-report/1"``):

- Money is a JSON *string* holding the exact decimal USD amount with six decimals
  (micro-dollars, the ledger's unit), e.g. ``"1234.567891"``: ``Decimal(value)`` gives it
  back without loss. Strings, not numbers, because JSON readers turn numbers into floats.
- Percentages are strings with one decimal (``"38.2"``), or ``null`` when undefined
  (nothing to compare against). GPU-hours are strings with six decimals.
- Times are ISO 8601 in UTC; days are local dates (``YYYY-MM-DD``) in ``timezone``.
- Keys are sorted; lists keep the report's order (most expensive first; days in order).
"""

from __future__ import annotations

import json
from typing import Any

from gpuopt.orchestrator.report.json_values import money
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.sections import SECTIONS

__all__ = ["SCHEMA", "money", "render_json", "report_to_json"]

SCHEMA = "gpuopt.weekly-report/1"
# The order of the keys in report_to_json's dict (the API sends it unsorted): the order
# of format 1's first release; a section's new keys follow these, in the sections' order.
KEY_ORDER = ("schema", "week", "timezone", "scope", "summary", "previous", "change",
             "by_cloud", "by_gpu", "by_market", "by_owner", "by_team", "jobs", "top_jobs",
             "preemptions", "team_budgets", "simulated", "utilisation", "daily")


def report_to_json(report: WeeklyReport) -> dict[str, Any]:
    """The schema, then every section's keys (sections/; no two sections share a key)."""
    out: dict[str, Any] = {"schema": SCHEMA}
    for section in SECTIONS:
        keys = section.json(section.build(report))
        clash = out.keys() & keys.keys()
        if clash:
            raise ValueError(f"section {section.name} repeats the JSON keys {sorted(clash)}")
        out.update(keys)
    first = {key: out[key] for key in KEY_ORDER if key in out}
    return first | {key: value for key, value in out.items() if key not in first}


def render_json(report: WeeklyReport) -> str:
    return json.dumps(report_to_json(report), indent=2, sort_keys=True) + "\n"
