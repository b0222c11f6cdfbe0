"""The report's head: week, scope, and this week's totals against the previous week's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report import html_layout as h
from gpuopt.orchestrator.report import json_values as j
from gpuopt.orchestrator.report.fmt import hours, pct, signed_usd, usd
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.sections.base import Section
from gpuopt.orchestrator.report.text_layout import table


def build(report: WeeklyReport) -> WeeklyReport:
    return report  # the head shows the report's scope and its summary figures


def _change(report: WeeklyReport) -> str:
    return f"{signed_usd(report.total_change)} ({pct(report.total_change_pct, signed=True)})"


def text(report: WeeklyReport) -> list[str]:
    s, p = report.summary, report.previous
    start = s.start.astimezone(ZoneInfo(report.timezone)).date()
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
    return out


def html(report: WeeklyReport, images: Mapping[str, str]) -> list[str]:
    tz = ZoneInfo(report.timezone)
    first, last = report.summary.start.astimezone(tz).date(), report.daily[-1].day
    dates = f"{first:%a %d %b %Y} to {last:%a %d %b %Y} ({report.timezone})"
    return [_header(report, dates), _kpis(report)]


def _header(report: WeeklyReport, dates: str) -> str:
    return (
        f'<p style="{h.FONT}font-size:12px;color:#5f6b7a;margin:0;">gpuopt weekly cost report'
        f" &middot; {h.escape(report.scope)}</p>"
        f'<h1 style="{h.FONT}font-size:22px;color:#1a2b3c;margin:4px 0 2px 0;">'
        f"Week {h.escape(str(report.week))}</h1>"
        f'<p style="{h.FONT}font-size:13px;color:#5f6b7a;margin:0 0 14px 0;">'
        f"{h.escape(dates)}</p>"
    )


def _kpi(title: str, value: str, note: str, color: str = "#1a2b3c") -> str:
    return (
        f'<td width="25%" valign="top" style="padding:10px 8px;background:#f7f8fa;'
        f'border:1px solid #e6e8eb;">'
        f'<div style="{h.FONT}font-size:11px;color:#5f6b7a;text-transform:uppercase;">'
        f"{h.escape(title)}</div>"
        f'<div style="{h.FONT}font-size:19px;font-weight:bold;color:{color};padding:3px 0;">'
        f"{h.escape(value)}</div>"
        f'<div style="{h.FONT}font-size:11px;color:#5f6b7a;">{h.escape(note)}</div></td>'
    )


def _kpis(report: WeeklyReport) -> str:
    s, p = report.summary, report.previous
    change = report.total_change
    change_note = f"{signed_usd(change)} ({pct(report.total_change_pct, signed=True)}) vs {p.week}"
    cells = [
        _kpi("Spend", usd(s.total), change_note),
        _kpi("On-demand equiv.", usd(s.on_demand), f"{hours(s.gpu_hours)} GPU-hours"),
        _kpi("Saved", usd(s.savings), f"{pct(s.savings_pct)} of on-demand",
             h.GOOD if s.savings >= 0 else h.BAD),
        _kpi("Preemptions", str(s.preemptions), f"{hours(s.wasted_gpu_hours)} GPU-h wasted"),
    ]
    spacer = '<td width="8" style="font-size:0;line-height:0;">&nbsp;</td>'
    return (
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">'
        f"<tr>{spacer.join(cells)}</tr></table>"
    )


def json(report: WeeklyReport) -> dict[str, Any]:
    return {
        "week": str(report.week),
        "timezone": report.timezone,
        "scope": {"owner": report.owner, "team": report.team},
        "summary": j.summary(report.summary),
        "previous": j.summary(report.previous),
        "change": {"spend": j.money(report.total_change),
                   "spend_pct": j.pct(report.total_change_pct)},
    }


SECTION = Section("summary", build, text, html, json)
