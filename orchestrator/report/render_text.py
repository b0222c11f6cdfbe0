"""Plain-text rendering: aligned columns, fits 100 characters, readable in any mail client."""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.fmt import hours, label, pct, signed_usd, usd
from gpuopt.orchestrator.report.model import JobLine, SpendLine, WeeklyReport


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """Aligned columns; ``right`` holds the indexes of right-aligned (numeric) columns."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def fmt(row: Sequence[str]) -> str:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return [fmt(headers), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)]


def render_text(report: WeeklyReport) -> str:
    s, p = report.summary, report.previous
    start = s.start.astimezone(_tz(report)).date()
    last = report.daily[-1].day
    out = [
        f"gpuopt weekly cost report - {report.week} ({start} to {last}, {report.timezone})",
        f"Scope: {report.scope}",
        "",
    ]
    out += table(
        ["", "This week", f"Previous ({p.week})", "Change"],
        [
            ["Spend", usd(s.total), usd(p.total), _change(report)],
            ["On-demand equivalent", usd(s.on_demand), usd(p.on_demand), ""],
            ["Saved", usd(s.savings), usd(p.savings), ""],
            ["Saved %", pct(s.savings_pct), pct(p.savings_pct), ""],
            ["GPU-hours", hours(s.gpu_hours), hours(p.gpu_hours), ""],
            ["Preemptions", str(s.preemptions), str(p.preemptions), ""],
            ["GPU-hours wasted", hours(s.wasted_gpu_hours), hours(p.wasted_gpu_hours), ""],
        ],
        right={1, 2, 3},
    )
    for title, lines in (
        ("Spend by cloud", report.by_cloud),
        ("Spend by GPU", report.by_gpu),
        ("Spend by market", report.by_market),
        ("Spend by team", report.by_team),
        ("Spend by owner", report.by_owner),
    ):
        out += ["", title, *_spend_table(lines)]
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
    out += ["", "Five most expensive jobs", *_job_table(report.top_jobs)]
    for state, title in (
        ("finished", "Jobs finished"),
        ("failed", "Jobs failed"),
        ("running", "Jobs still running"),
    ):
        jobs = report.jobs_in(state)
        out += ["", f"{title} ({len(jobs)})"]
        out += _job_table(jobs) if jobs else ["  none"]
    out += ["", "Budget burn per job"]
    budget_jobs = report.jobs_with_budget
    out += table(
        ["Job", "Budget", "Spent to date", "Burn", "Remaining"],
        [
            [j.name, usd(j.budget), usd(j.cost_to_date), pct(j.budget_burn_pct),
             usd(j.budget - j.cost_to_date)]
            for j in budget_jobs
            if j.budget is not None
        ],
        right={1, 2, 3, 4},
    ) if budget_jobs else ["  no job of this report has a budget"]
    if report.team_budgets:
        out += ["", "Weekly budget burn per team"]
        out += table(
            ["Team", "Budget", "Spent", "Burn", "Remaining"],
            [
                [t.team, usd(t.budget), usd(t.spent), pct(t.burn_pct), usd(t.remaining)]
                for t in report.team_budgets
            ],
            right={1, 2, 3, 4},
        )
    out += ["", f"Preemptions ({len(report.preemptions)})"]
    out += table(
        ["Job", "Attempt", "Where", "GPUs", "Ended", "GPU-h wasted", "Wasted"],
        [
            [x.job_name, str(x.attempt), f"{x.cloud} {x.region}", f"{x.gpu_count}x {x.gpu}",
             x.ended_at.astimezone(_tz(report)).strftime("%a %H:%M"),
             hours(x.wasted_gpu_hours), usd(x.wasted_cost)]
            for x in report.preemptions
        ],
        right={1, 5, 6},
    ) if report.preemptions else ["  none"]
    out += [
        "",
        "Every figure is from the ledger at the price in force when each attempt launched.",
        "",
    ]
    return "\n".join(out)


def _tz(report: WeeklyReport) -> ZoneInfo:
    return ZoneInfo(report.timezone)


def _change(report: WeeklyReport) -> str:
    return f"{signed_usd(report.total_change)} ({pct(report.total_change_pct, signed=True)})"


def _spend_table(lines: Sequence[SpendLine]) -> list[str]:
    if not lines:
        return ["  none"]
    return table(
        ["", "Spend", "On-demand", "Saved", "Saved %", "GPU-h"],
        [
            [ln.key, usd(ln.cost), usd(ln.on_demand), usd(ln.savings), pct(ln.savings_pct),
             hours(ln.gpu_hours)]
            for ln in lines
        ],
        right={1, 2, 3, 4, 5},
    )


def _job_table(jobs: Sequence[JobLine]) -> list[str]:
    if not jobs:
        return ["  none"]
    return table(
        ["Job", "Owner", "Team", "State", "This week", "To date", "Budget", "Preempted"],
        [
            [j.name, label(j.owner), label(j.team), j.state, usd(j.week_cost),
             usd(j.cost_to_date), usd(j.budget) if j.budget is not None else "-",
             str(j.preemptions)]
            for j in jobs
        ],
        right={4, 5, 6, 7},
    )
