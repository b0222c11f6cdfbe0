"""HTML layout for the report's sections: table layout, inline styles only (mail clients
drop <style> blocks, flexbox and scripts in various ways; nested tables with inline
styles and fixed widths render the same in all). Every value is escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report.table import Table

WIDTH = 640
MAX_ROWS = 10  # longer job lists end with an "N more" row (the text part lists them all)


def escape(value: str) -> str:
    """HTML-escaped, control characters and bidi overrides written as visible escapes
    (core/safe_text.py): they would reorder what a mail client shows."""
    return html.escape(escape_text(value))


FONT = "font-family:Helvetica,Arial,sans-serif;"
TD = f"{FONT}font-size:13px;color:#222222;padding:5px 8px;border-bottom:1px solid #e6e8eb;"
TH = (
    f"{FONT}font-size:11px;color:#5f6b7a;padding:5px 8px;text-transform:uppercase;"
    "letter-spacing:0.3px;border-bottom:2px solid #d0d5db;font-weight:bold;"
)
H2 = f"{FONT}font-size:16px;color:#1a2b3c;margin:0;padding:22px 0 8px 0;font-weight:bold;"
GOOD, BAD = "#1e7b45", "#b3261e"


def section(title: str, content: str) -> str:
    return f'<h2 style="{H2}">{escape(title)}</h2>\n{content}'


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    if not rows:
        return f'<p style="{FONT}font-size:13px;color:#5f6b7a;margin:0;">None.</p>'

    def align(i: int) -> str:
        return "right" if i in right else "left"

    head = "".join(
        f'<th align="{align(i)}" style="{TH}text-align:{align(i)};">{escape(h)}</th>'
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td align="{align(i)}" style="{TD}text-align:{align(i)};'
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


def section_table(t: Table) -> str:
    return table(t.headers, t.rows, set(t.right))
