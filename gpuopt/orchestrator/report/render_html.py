"""HTML e-mail rendering: table layout, inline styles only, no scripts, no external CSS.

Mail clients (Gmail, Outlook, Apple Mail) drop <style> blocks, flexbox and scripts in
various ways; nested tables with inline styles and fixed widths render the same in all.
Charts are <img> tags whose ``src`` the caller chooses: ``cid:...`` in the e-mail, a
relative file name for the copy saved to disk. Every value is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from decimal import Decimal
from zoneinfo import ZoneInfo

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report import sections
from gpuopt.orchestrator.report.charts import CHART_TITLES, DAILY, VERSUS
from gpuopt.orchestrator.report.fmt import hours, label, pct, signed_usd, usd
from gpuopt.orchestrator.report.model import JobLine, WeeklyReport
from gpuopt.orchestrator.report.sections import Table

WIDTH = 640
MAX_ROWS = 10  # longer job lists end with an "N more" row (the text part lists them all)


def escape(value: str) -> str:
    """HTML-escaped, control characters and bidi overrides written as visible escapes
    (core/safe_text.py): they would reorder what a mail client shows."""
    return html.escape(escape_text(value))


_FONT = "font-family:Helvetica,Arial,sans-serif;"
_TD = f"{_FONT}font-size:13px;color:#222222;padding:5px 8px;border-bottom:1px solid #e6e8eb;"
_TH = (
    f"{_FONT}font-size:11px;color:#5f6b7a;padding:5px 8px;text-transform:uppercase;"
    "letter-spacing:0.3px;border-bottom:2px solid #d0d5db;font-weight:bold;"
)
_H2 = f"{_FONT}font-size:16px;color:#1a2b3c;margin:0;padding:22px 0 8px 0;font-weight:bold;"
_GOOD, _BAD = "#1e7b45", "#b3261e"


def render_html(report: WeeklyReport, image_src: Mapping[str, str]) -> str:
    """The report page; ``image_src`` maps chart names (charts.DAILY, charts.VERSUS) to URLs."""
    s = report.summary
    tz = ZoneInfo(report.timezone)
    first, last = s.start.astimezone(tz).date(), report.daily[-1].day
    body = [
        _header(report, f"{first:%a %d %b %Y} to {last:%a %d %b %Y} ({report.timezone})"),
        _kpis(report),
        *_simulated(report),
        _section(CHART_TITLES[DAILY], _image(image_src, DAILY)),
        _section(CHART_TITLES[VERSUS], _image(image_src, VERSUS)),
        _section(sections.TOP_JOBS, _jobs_table(report.top_jobs)),
        *(_section(title, _section_table(sections.spend_table(lines)))
          for title, lines in sections.spend_breakdowns(report)),
    ]
    for state, title in sections.JOB_STATES:
        jobs = report.jobs_in(state)
        cost = usd(sum((j.week_cost for j in jobs), Decimal(0)))
        body.append(
            _section(f"{title} ({len(jobs)}, {cost} this week)", _jobs_table(jobs, MAX_ROWS))
        )
    body.append(_section(sections.JOB_BUDGETS, _section_table(sections.job_budget_table(report))))
    if report.team_budgets:
        body.append(_section(sections.TEAM_BUDGETS,
                             _section_table(sections.team_budget_table(report))))
    body.append(_section(sections.preemptions_title(report),
                         _section_table(sections.preemption_table(report))))
    if report.utilisation is None:
        body.append(_section(sections.UTILISATION, escape(sections.NO_UTILISATION)))
    else:
        body.append(_section(sections.UTILISATION,
                             _section_table(sections.utilisation_table(report))))
        body.append(_section(sections.IDLE_JOBS,
                             _section_table(sections.idle_jobs_table(report))))
        body.append(_section(sections.TOKEN_COSTS,
                             _section_table(sections.token_cost_table(report))))
    body.append(_footer(report))
    inner = "\n".join(body)
    title = escape(f"gpuopt weekly cost report {report.week}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title></head>
<body style="margin:0;padding:0;background:#f3f4f6;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"
 style="background:#f3f4f6;"><tr><td align="center" style="padding:16px 8px;">
<table role="presentation" width="{WIDTH}" cellpadding="0" cellspacing="0" border="0"
 style="width:{WIDTH}px;max-width:100%;background:#ffffff;border:1px solid #dde1e6;">
<tr><td style="padding:20px 24px 24px 24px;">
{inner}
</td></tr></table>
</td></tr></table>
</body></html>
"""


def _header(report: WeeklyReport, dates: str) -> str:
    return (
        f'<p style="{_FONT}font-size:12px;color:#5f6b7a;margin:0;">gpuopt weekly cost report'
        f" &middot; {escape(report.scope)}</p>"
        f'<h1 style="{_FONT}font-size:22px;color:#1a2b3c;margin:4px 0 2px 0;">'
        f"Week {escape(str(report.week))}</h1>"
        f'<p style="{_FONT}font-size:13px;color:#5f6b7a;margin:0 0 14px 0;">{escape(dates)}</p>'
    )


def _kpi(title: str, value: str, note: str, color: str = "#1a2b3c") -> str:
    return (
        f'<td width="25%" valign="top" style="padding:10px 8px;background:#f7f8fa;'
        f'border:1px solid #e6e8eb;">'
        f'<div style="{_FONT}font-size:11px;color:#5f6b7a;text-transform:uppercase;">'
        f"{escape(title)}</div>"
        f'<div style="{_FONT}font-size:19px;font-weight:bold;color:{color};padding:3px 0;">'
        f"{escape(value)}</div>"
        f'<div style="{_FONT}font-size:11px;color:#5f6b7a;">{escape(note)}</div></td>'
    )


def _kpis(report: WeeklyReport) -> str:
    s, p = report.summary, report.previous
    change = report.total_change
    change_note = f"{signed_usd(change)} ({pct(report.total_change_pct, signed=True)}) vs {p.week}"
    cells = [
        _kpi("Spend", usd(s.total), change_note),
        _kpi("On-demand equiv.", usd(s.on_demand), f"{hours(s.gpu_hours)} GPU-hours"),
        _kpi("Saved", usd(s.savings), f"{pct(s.savings_pct)} of on-demand",
             _GOOD if s.savings >= 0 else _BAD),
        _kpi("Preemptions", str(s.preemptions), f"{hours(s.wasted_gpu_hours)} GPU-h wasted"),
    ]
    spacer = '<td width="8" style="font-size:0;line-height:0;">&nbsp;</td>'
    return (
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">'
        f"<tr>{spacer.join(cells)}</tr></table>"
    )


def _simulated(report: WeeklyReport) -> list[str]:
    sim = report.simulated
    if sim is None:
        return []
    text = (f"Simulated runs (local executor; priced as if on their placement, never paid, "
            f"left out of every other figure): {usd(sim.total)} for "
            f"{len(report.simulated_jobs)} job(s), {sim.preemptions} preemption(s).")
    return [f'<p style="font-size:13px;color:#555555;">{escape(text)}</p>']


def _section(title: str, content: str) -> str:
    return f'<h2 style="{_H2}">{escape(title)}</h2>\n{content}'


def _image(image_src: Mapping[str, str], name: str) -> str:
    alt = escape(CHART_TITLES[name])
    return (
        f'<img src="{escape(image_src[name])}" alt="{alt}" width="{WIDTH - 48}" '
        f'style="display:block;width:100%;max-width:{WIDTH - 48}px;height:auto;border:0;">'
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    if not rows:
        return f'<p style="{_FONT}font-size:13px;color:#5f6b7a;margin:0;">None.</p>'

    def align(i: int) -> str:
        return "right" if i in right else "left"

    head = "".join(
        f'<th align="{align(i)}" style="{_TH}text-align:{align(i)};">{escape(h)}</th>'
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td align="{align(i)}" style="{_TD}text-align:{align(i)};'
            f'{"white-space:nowrap;" if i > 0 else ""}">{escape(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return (
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" '
        f'style="border-collapse:collapse;"><tr>{head}</tr>{body}</table>'
    )


def _jobs_table(jobs: Sequence[JobLine], limit: int | None = None) -> str:
    shown = jobs if limit is None else jobs[:limit]
    rows = [
        [j.name, label(j.owner), label(j.team), j.state, usd(j.week_cost), usd(j.cost_to_date)]
        for j in shown
    ]
    rest = jobs[len(shown):]
    if rest:
        rest_cost = usd(sum((j.week_cost for j in rest), Decimal(0)))
        rows.append([f"... {len(rest)} more", "", "", "", rest_cost, ""])
    return _table(["Job", "Owner", "Team", "State", "This week", "To date"], rows, right={4, 5})


def _section_table(t: Table) -> str:
    return _table(t.headers, t.rows, set(t.right))


def _footer(report: WeeklyReport) -> str:
    return (
        f'<p style="{_FONT}font-size:11px;color:#7a8591;margin:24px 0 0 0;'
        'border-top:1px solid #e6e8eb;padding-top:10px;">'
        "Every figure comes from the ledger at the price in force when each attempt launched; "
        "nothing is re-priced. On-demand equivalent: the same GPU-hours at the on-demand price "
        f"of the same instance type in the same place. Days in {escape(report.timezone)}.</p>"
    )
