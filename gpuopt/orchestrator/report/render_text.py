"""Plain-text rendering: aligned columns, fits 80 characters (a default terminal and any
mail client); a table too wide for that leaves out its optional columns, then wraps its
text cells (at spaces and hyphens) onto continuation lines; no number is cut."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report import sections
from gpuopt.orchestrator.report.fmt import hours, label, pct, signed_usd, usd
from gpuopt.orchestrator.report.model import JobLine, WeeklyReport
from gpuopt.orchestrator.report.sections import Table

WIDTH = 80


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int],
          optional: Sequence[int] = ()) -> list[str]:
    """Aligned columns; ``right`` holds the indexes of right-aligned (numeric) columns.
    Columns in ``optional`` are left out, in that order, while a line exceeds WIDTH.
    Cells are escaped (core/safe_text.py) before they are measured."""
    rows = [[escape_text(c) for c in r] for r in rows]
    keep = list(range(len(headers)))
    for drop in (None, *optional):
        if drop is not None:
            keep.remove(drop)
        if _width([headers[i] for i in keep], [[r[i] for i in keep] for r in rows]) <= WIDTH:
            break
    if len(keep) < len(headers):
        headers = [headers[i] for i in keep]
        rows = [[r[i] for i in keep] for r in rows]
        right = {keep.index(i) for i in right if i in keep}
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    widths = _narrowed(headers, rows, widths, right)

    def fmt(row: Sequence[str]) -> list[str]:
        # A text cell wider than its column wraps at spaces and hyphens (whole words
        # where they fit) onto continuation lines; numbers are never wrapped.
        parts = [[c] if len(c) <= w else textwrap.wrap(c, w) or [""]
                 for c, w in zip(row, widths, strict=True)]
        lines = []
        for n in range(max(map(len, parts))):
            cells = [
                (p[n] if n < len(p) else "").rjust(w) if i in right
                else (p[n] if n < len(p) else "").ljust(w)
                for i, (p, w) in enumerate(zip(parts, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        return lines

    out = [*fmt(headers), "  ".join("-" * w for w in widths)]
    for r in rows:
        out.extend(fmt(r))
    return out


def _narrowed(headers: Sequence[str], rows: Sequence[Sequence[str]], widths: list[int],
              right: set[int]) -> list[int]:
    """Text (left-aligned) columns narrowed, the widest first, until a line fits WIDTH;
    never below their header, their longest word-part or 8."""
    widths = list(widths)

    def floor(i: int) -> int:
        parts = [p for r in rows for p in re.split(r"[\s-]", r[i])]
        return max(len(headers[i]), min(max(map(len, parts), default=0), 16), 8)

    floors = {i: floor(i) for i in range(len(widths)) if i not in right}
    while sum(widths) + 2 * (len(widths) - 1) > WIDTH:
        text = [i for i, f in floors.items() if widths[i] > f]
        if not text:
            break
        widths[max(text, key=lambda i: widths[i])] -= 1
    return widths


def section_table(t: Table, empty: str = "none", optional: Sequence[int] = ()) -> list[str]:
    """A section's table as aligned lines, or one indented line when it has no rows."""
    if not t.rows:
        return [f"  {empty}"]
    return table(t.headers, t.rows, set(t.right), optional)


def render_text(report: WeeklyReport) -> str:
    """The report as plain text (a terminal, the mail's text part): names, owners and
    teams come from the store, where an older version may have kept control characters;
    each is escaped (core/safe_text.py), and the whole text once more as a backstop."""
    return escape_text(_render_text(report), multiline=True)


def _render_text(report: WeeklyReport) -> str:
    s, p = report.summary, report.previous
    start = s.start.astimezone(_tz(report)).date()
    last = report.daily[-1].day
    out = [
        f"gpuopt weekly cost report - {report.week} ({start} to {last}, {report.timezone})",
        f"Scope: {escape_text(report.scope)}",
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
    out += _simulated(report)
    for title, lines in sections.spend_breakdowns(report):
        out += ["", title, *section_table(sections.spend_table(lines))]
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
    out += ["", sections.TOP_JOBS, *_job_table(report.top_jobs)]
    for state, title in sections.JOB_STATES:
        jobs = report.jobs_in(state)
        out += ["", f"{title} ({len(jobs)})", *_job_table(jobs)]
    out += ["", sections.JOB_BUDGETS,
            *section_table(sections.job_budget_table(report), sections.NO_JOB_BUDGETS)]
    if report.team_budgets:
        out += ["", sections.TEAM_BUDGETS, *section_table(sections.team_budget_table(report))]
    out += ["", sections.preemptions_title(report),
            *section_table(sections.preemption_table(report),
                           optional=(4, 2))]  # GPU-h wasted, GPUs
    out += _utilisation(report)
    out += [
        "",
        "Every figure is from the ledger, at the price in force when each attempt began.",
        "",
    ]
    return "\n".join(out)


def _simulated(report: WeeklyReport) -> list[str]:
    sim = report.simulated
    if sim is None:
        return []
    import textwrap

    return ["", *textwrap.wrap(
        f"Simulated runs (local executor; priced as if on their placement, never paid, left "
        f"out of every other figure): {usd(sim.total)} for {len(report.simulated_jobs)} "
        f"job(s), {hours(sim.gpu_hours)} GPU-hours, {sim.preemptions} preemption(s).", WIDTH)]


def _utilisation(report: WeeklyReport) -> list[str]:
    if report.utilisation is None:
        return ["", sections.UTILISATION, f"  {sections.NO_UTILISATION}"]
    return ["", sections.UTILISATION, *section_table(sections.utilisation_table(report)),
            "", sections.IDLE_JOBS, *section_table(sections.idle_jobs_table(report)),
            "", sections.TOKEN_COSTS,
            *section_table(sections.token_cost_table(report),
                           "no measured job reported tokens (progress file 'tokens')")]


def _width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    widths = [max((len(h), *(len(r[i]) for r in rows))) for i, h in enumerate(headers)]
    return sum(widths) + 2 * (len(widths) - 1)


def _tz(report: WeeklyReport) -> ZoneInfo:
    return ZoneInfo(report.timezone)


def _change(report: WeeklyReport) -> str:
    return f"{signed_usd(report.total_change)} ({pct(report.total_change_pct, signed=True)})"


def _job_table(jobs: Sequence[JobLine]) -> list[str]:
    if not jobs:
        return ["  none"]
    return table(
        ["Job", "Owner", "Team", "State", "This week", "To date", "Budget", "Preempt."],
        [
            [j.name, label(j.owner), label(j.team), j.state, usd(j.week_cost),
             usd(j.cost_to_date), usd(j.budget) if j.budget is not None else "-",
             str(j.preemptions)]
            for j in jobs
        ],
        right={4, 5, 6, 7},
        optional=(2, 1, 6),  # team, owner (both in their own spend tables), budget
    )
