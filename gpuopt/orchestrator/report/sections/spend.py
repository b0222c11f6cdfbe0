"""Where the money went: spend by cloud, GPU, market, team and owner; spend by day (a
table in the text, two charts in the HTML); the five most expensive jobs.

One section because the text and the HTML show these three in different orders (text:
breakdowns, daily table, top jobs; HTML: charts, top jobs, breakdowns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.charts import CHART_TITLES, DAILY, VERSUS
from gpuopt.orchestrator.report.fmt import hours, pct, usd
from gpuopt.orchestrator.report.model import SpendLine, WeeklyReport
from gpuopt.orchestrator.report.sections.base import Section, Table
from gpuopt.orchestrator.report.sections.jobs import html_jobs, text_jobs
from gpuopt.orchestrator.report.text_layout import section_table, table

TOP_JOBS = "Five most expensive jobs"
# (title, the report's attribute = the JSON key) of every "Spend by ..." table, in order
BREAKDOWNS = (
    ("Spend by cloud", "by_cloud"),
    ("Spend by GPU", "by_gpu"),
    ("Spend by market", "by_market"),
    ("Spend by team", "by_team"),
    ("Spend by owner", "by_owner"),
)


def spend_breakdowns(report: WeeklyReport) -> list[tuple[str, Sequence[SpendLine]]]:
    """(title, lines) of every "Spend by ..." section, in order."""
    return [(title, getattr(report, key)) for title, key in BREAKDOWNS]


def spend_table(lines: Sequence[SpendLine]) -> Table:
    return Table(
        ("", "Spend", "On-demand", "Saved", "Saved %", "GPU-h"),
        tuple(
            (ln.key, usd(ln.cost), usd(ln.on_demand), usd(ln.savings), pct(ln.savings_pct),
             hours(ln.gpu_hours))
            for ln in lines
        ),
        frozenset({1, 2, 3, 4, 5}),
    )


def build(report: WeeklyReport) -> WeeklyReport:
    return report  # the breakdowns, the days and the top jobs, read as they are


def text(report: WeeklyReport) -> list[str]:
    out: list[str] = []
    for title, lines in spend_breakdowns(report):
        out += ["", title, *section_table(spend_table(lines))]
    out += ["", "Daily spend"]
    out += table(
        ["Day", *report.clouds, "Total", "On-demand"],
        [
            [d.day.strftime("%a %d %b"), *(usd(c) for _, c in d.by_cloud), usd(d.total),
             usd(d.on_demand)]
            for d in report.daily
        ],
        right=set(range(1, len(report.clouds) + 3)),
    )
    out += ["", TOP_JOBS, *text_jobs(report.top_jobs)]
    return out


def _image(images: Mapping[str, str], name: str) -> str:
    alt = h.escape(CHART_TITLES[name])
    return (
        f'<img src="{h.escape(images[name])}" alt="{alt}" width="{h.WIDTH - 48}" '
        f'style="display:block;width:100%;max-width:{h.WIDTH - 48}px;height:auto;border:0;">'
    )


def html(report: WeeklyReport, images: Mapping[str, str]) -> list[str]:
    return [
        h.section(CHART_TITLES[DAILY], _image(images, DAILY)),
        h.section(CHART_TITLES[VERSUS], _image(images, VERSUS)),
        h.section(TOP_JOBS, html_jobs(report.top_jobs)),
        *(h.section(title, h.section_table(spend_table(lines)))
          for title, lines in spend_breakdowns(report)),
    ]


def json(report: WeeklyReport) -> dict[str, Any]:
    return {
        **{key: [j.spend(s) for s in getattr(report, key)] for _, key in BREAKDOWNS},
        "top_jobs": [line.job_id for line in report.top_jobs],
        "daily": [
            {
                "day": d.day.isoformat(),
                "by_cloud": {c: j.money(v) for c, v in d.by_cloud},
                "total": j.money(d.total),
                "on_demand": j.money(d.on_demand),
            }
            for d in report.daily
        ],
    }


SECTION = Section("spend", build, text, html, json)
