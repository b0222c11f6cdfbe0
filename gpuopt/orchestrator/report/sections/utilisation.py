"""GPU utilisation measured by nvidia-smi: GPU-hours by busy band, the jobs that kept
their GPUs mostly idle, and the cost per million tokens of jobs that report tokens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.fmt import hours, pct, usd
from gpuopt.orchestrator.report.model import WeeklyReport, percent
from gpuopt.orchestrator.report.sections.base import LedgerWeek, Section, Table
from gpuopt.orchestrator.report.text_layout import section_table
from gpuopt.orchestrator.report.utilisation import Utilisation, utilisation_of

UTILISATION = "GPU utilisation (measured by nvidia-smi)"
IDLE_JOBS = "Jobs that kept their GPUs mostly idle (under 50% busy)"
TOKEN_COSTS = "Cost per million tokens"
NO_UTILISATION = "no attempt of this report was measured (no nvidia-smi on its node)"
NO_TOKENS = "no measured job reported tokens (progress file 'tokens')"


@dataclass(frozen=True, slots=True)
class Measured:
    utilisation: Utilisation | None
    bands: Table
    idle_jobs: Table
    token_costs: Table


def utilisation_table(u: Utilisation | None) -> Table:
    """GPU-hours by utilisation band, then the unmeasured ones."""
    if u is None:
        return Table(("Busy", "GPU-h", "Share"), (), frozenset({1, 2}))
    whole = u.measured_gpu_hours
    rows = [(name, hours(hh), pct(percent(hh, whole))) for name, hh in u.bands]
    rows.append(("not measured", hours(u.unmeasured_gpu_hours), "-"))
    return Table(("Busy", "GPU-h", "Share"), tuple(rows), frozenset({1, 2}))


def idle_jobs_table(u: Utilisation | None) -> Table:
    jobs = u.idle_jobs if u else ()
    return Table(("Job", "GPU-h", "Busy"),
                 tuple((jl.name, hours(jl.gpu_hours), pct(jl.utilization_pct)) for jl in jobs),
                 frozenset({1, 2}))


def token_cost_table(u: Utilisation | None) -> Table:
    costs = u.token_costs if u else ()
    return Table(("Job", "Tokens", "Cost", "Per 1M tokens"),
                 tuple((t.name + (" (simulated)" if t.simulated else ""), f"{t.tokens:,}",
                        usd(t.cost), usd(t.per_million)) for t in costs),
                 frozenset({1, 2, 3}))


def collect(week: LedgerWeek) -> Utilisation | None:
    return utilisation_of(week.attempts, week.start, week.end)


def build(report: WeeklyReport) -> Measured:
    u: Utilisation | None = report.collected.get("utilisation")
    return Measured(u, utilisation_table(u), idle_jobs_table(u), token_cost_table(u))


def text(m: Measured) -> list[str]:
    if m.utilisation is None:
        return ["", UTILISATION, f"  {NO_UTILISATION}"]
    return ["", UTILISATION, *section_table(m.bands),
            "", IDLE_JOBS, *section_table(m.idle_jobs),
            "", TOKEN_COSTS, *section_table(m.token_costs, NO_TOKENS)]


def html(m: Measured, images: Mapping[str, str]) -> list[str]:
    if m.utilisation is None:
        return [h.section(UTILISATION, h.escape(NO_UTILISATION))]
    return [h.section(UTILISATION, h.section_table(m.bands)),
            h.section(IDLE_JOBS, h.section_table(m.idle_jobs)),
            h.section(TOKEN_COSTS, h.section_table(m.token_costs))]


def json(m: Measured) -> dict[str, Any]:
    u = m.utilisation
    if u is None:
        return {"utilisation": None}
    return {"utilisation": {
        "gpu_hours_by_band": {name: j.hours(hh) for name, hh in u.bands},
        "unmeasured_gpu_hours": j.hours(u.unmeasured_gpu_hours),
        "idle_jobs": [{"job_id": jl.job_id, "name": jl.name, "gpu_hours": j.hours(jl.gpu_hours),
                       "utilization_pct": j.pct(jl.utilization_pct)} for jl in u.idle_jobs],
        "cost_per_million_tokens": [
            {"job_id": t.job_id, "name": t.name, "tokens": t.tokens, "cost": j.money(t.cost),
             "per_million": j.money(t.per_million), "simulated": t.simulated}
            for t in u.token_costs],
    }}


SECTION = Section("utilisation", build, text, html, json, collect)
