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
from decimal import Decimal
from typing import Any

from gpuopt.core.money import MICRO_USD
from gpuopt.orchestrator.report.model import (
    HOURS_STEP,
    JobLine,
    Preemption,
    SpendLine,
    WeeklyReport,
    WeekSummary,
)

SCHEMA = "gpuopt.weekly-report/1"


def money(value: Decimal) -> str:
    return str(value.quantize(MICRO_USD))


def _pct(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _hours(value: Decimal) -> str:
    return str(value.quantize(HOURS_STEP))


def report_to_json(report: WeeklyReport) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "week": str(report.week),
        "timezone": report.timezone,
        "scope": {"owner": report.owner, "team": report.team},
        "summary": _summary(report.summary),
        "previous": _summary(report.previous),
        "change": {"spend": money(report.total_change), "spend_pct": _pct(report.total_change_pct)},
        "by_cloud": [_spend(s) for s in report.by_cloud],
        "by_gpu": [_spend(s) for s in report.by_gpu],
        "by_market": [_spend(s) for s in report.by_market],
        "by_owner": [_spend(s) for s in report.by_owner],
        "by_team": [_spend(s) for s in report.by_team],
        "jobs": [_job(j) for j in report.jobs],
        "top_jobs": [j.job_id for j in report.top_jobs],
        "preemptions": [_preemption(p) for p in report.preemptions],
        "team_budgets": [
            {
                "team": t.team,
                "budget": money(t.budget),
                "spent": money(t.spent),
                "remaining": money(t.remaining),
                "burn_pct": _pct(t.burn_pct),
            }
            for t in report.team_budgets
        ],
        "simulated": None if report.simulated is None else {
            **_summary(report.simulated), "jobs": list(report.simulated_jobs)},
        "utilisation": _utilisation(report),
        "daily": [
            {
                "day": d.day.isoformat(),
                "by_cloud": {c: money(v) for c, v in d.by_cloud},
                "total": money(d.total),
                "on_demand": money(d.on_demand),
            }
            for d in report.daily
        ],
    }


def _utilisation(report: WeeklyReport) -> dict[str, Any] | None:
    u = report.utilisation
    if u is None:
        return None
    return {
        "gpu_hours_by_band": {name: _hours(h) for name, h in u.bands},
        "unmeasured_gpu_hours": _hours(u.unmeasured_gpu_hours),
        "idle_jobs": [{"job_id": j.job_id, "name": j.name, "gpu_hours": _hours(j.gpu_hours),
                       "utilization_pct": _pct(j.utilization_pct)} for j in u.idle_jobs],
        "cost_per_million_tokens": [
            {"job_id": t.job_id, "name": t.name, "tokens": t.tokens, "cost": money(t.cost),
             "per_million": money(t.per_million), "simulated": t.simulated}
            for t in u.token_costs],
    }


def render_json(report: WeeklyReport) -> str:
    return json.dumps(report_to_json(report), indent=2, sort_keys=True) + "\n"


def _summary(s: WeekSummary) -> dict[str, Any]:
    return {
        "week": str(s.week),
        "start": s.start.isoformat(),
        "end": s.end.isoformat(),
        "spend": money(s.total),
        "on_demand": money(s.on_demand),
        "savings": money(s.savings),
        "savings_pct": _pct(s.savings_pct),
        "gpu_hours": _hours(s.gpu_hours),
        "preemptions": s.preemptions,
        "wasted_gpu_hours": _hours(s.wasted_gpu_hours),
    }


def _spend(s: SpendLine) -> dict[str, Any]:
    return {
        "key": s.key,
        "spend": money(s.cost),
        "on_demand": money(s.on_demand),
        "savings": money(s.savings),
        "savings_pct": _pct(s.savings_pct),
        "gpu_hours": _hours(s.gpu_hours),
    }


def _job(j: JobLine) -> dict[str, Any]:
    return {
        "job_id": j.job_id,
        "name": j.name,
        "owner": j.owner,
        "team": j.team,
        "state": j.state,
        "week_spend": money(j.week_cost),
        "week_on_demand": money(j.week_on_demand),
        "gpu_hours": _hours(j.gpu_hours),
        "cost_to_date": money(j.cost_to_date),
        "budget": None if j.budget is None else money(j.budget),
        "budget_burn_pct": _pct(j.budget_burn_pct),
        "preemptions": j.preemptions,
    }


def _preemption(p: Preemption) -> dict[str, Any]:
    return {
        "job_id": p.job_id,
        "job_name": p.job_name,
        "attempt": p.attempt,
        "cloud": p.cloud,
        "region": p.region,
        "gpu": p.gpu,
        "gpu_count": p.gpu_count,
        "ended_at": p.ended_at.isoformat(),
        "wasted_gpu_hours": _hours(p.wasted_gpu_hours),
        "wasted_cost": money(p.wasted_cost),
    }
