"""HTML e-mail rendering: table layout, inline styles only, no scripts, no external CSS.

Mail clients (Gmail, Outlook, Apple Mail) drop <style> blocks, flexbox and scripts in
various ways; nested tables with inline styles and fixed widths render the same in all
(html_layout.py). The page is every section's blocks (sections/), in order. Charts are
<img> tags whose ``src`` the caller chooses: ``cid:...`` in the e-mail, a relative file
name for the copy saved to disk. Every value is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuopt.orchestrator.report.html_layout import WIDTH, escape
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.sections import SECTIONS

__all__ = ["WIDTH", "escape", "render_html"]


def render_html(report: WeeklyReport, image_src: Mapping[str, str]) -> str:
    """The report page; ``image_src`` maps chart names (charts.DAILY, charts.VERSUS) to URLs."""
    body: list[str] = []
    for section in SECTIONS:
        body += section.html(section.build(report), image_src)
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
