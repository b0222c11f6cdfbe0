"""The report's JSON values (see render_json.py for the format): money and GPU-hours as
exact decimal strings, percentages as strings or null."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpuopt.core.money import MICRO_USD
from gpuopt.orchestrator.report.model import HOURS_STEP, SpendLine, WeekSummary


def money(value: Decimal) -> str:
    return str(value.quantize(MICRO_USD))


def pct(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def hours(value: Decimal) -> str:
    return str(value.quantize(HOURS_STEP))


def summary(s: WeekSummary) -> dict[str, Any]:
    return {
        "week": str(s.week),
        "start": s.start.isoformat(),
        "end": s.end.isoformat(),
        "spend": money(s.total),
        "on_demand": money(s.on_demand),
        "savings": money(s.savings),
        "savings_pct": pct(s.savings_pct),
        "gpu_hours": hours(s.gpu_hours),
        "preemptions": s.preemptions,
        "wasted_gpu_hours": hours(s.wasted_gpu_hours),
    }


def spend(s: SpendLine) -> dict[str, Any]:
    return {
        "key": s.key,
        "spend": money(s.cost),
        "on_demand": money(s.on_demand),
        "savings": money(s.savings),
        "savings_pct": pct(s.savings_pct),
        "gpu_hours": hours(s.gpu_hours),
    }
