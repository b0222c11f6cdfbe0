"""The report as an e-mail: multipart/alternative(text/plain, multipart/related(HTML, PNGs)).

The HTML part references each chart as ``cid:<Content-ID>``; the PNGs travel inline in
the same multipart/related, which is what Gmail, Outlook and Apple Mail display in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, formatdate, make_msgid

from gpuopt.core.safe_text import escape_text
from gpuopt.orchestrator.report.charts import render_charts
from gpuopt.orchestrator.report.fmt import pct, usd
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.render_html import render_html
from gpuopt.orchestrator.report.render_text import render_text

CID_DOMAIN = "report.gpuopt"


def subject(report: WeeklyReport) -> str:
    """One header line: the scope (a team or owner name, maybe from an older version's
    store) is escaped, so CR/LF can neither end the header nor raise (core/safe_text.py)."""
    s = report.summary
    return escape_text(
        f"gpuopt cost report {report.week} ({report.scope}): {usd(s.total)} spent, "
        f"{usd(s.savings)} ({pct(s.savings_pct)}) saved vs on-demand"
    )


def build_message(
    report: WeeklyReport,
    *,
    sender: str,
    recipients: Sequence[str],
    charts: Mapping[str, bytes] | None = None,
    sent_at: datetime | None = None,
) -> EmailMessage:
    """The e-mail for ``report``; ``charts`` default to charts.render_charts(report).

    ``sent_at`` (aware) is the Date header; None means the time of building.
    """
    pngs = render_charts(report) if charts is None else charts
    cids = {name: make_msgid(idstring=name, domain=CID_DOMAIN) for name in pngs}
    msg = EmailMessage()
    msg["Subject"] = subject(report)
    msg["From"] = sender
    msg["To"] = ", ".join(recipients)
    msg["Date"] = format_datetime(sent_at) if sent_at is not None else formatdate()
    msg["Message-ID"] = make_msgid(idstring=f"weekly-{report.week}", domain=CID_DOMAIN)
    msg.set_content(render_text(report))
    html = render_html(report, {name: "cid:" + cid[1:-1] for name, cid in cids.items()})
    msg.add_alternative(html, subtype="html")
    html_part = list(msg.iter_parts())[1]
    assert isinstance(html_part, EmailMessage)
    for name, png in pngs.items():
        html_part.add_related(
            png, maintype="image", subtype="png", cid=cids[name], filename=f"{name}.png",
            disposition="inline",
        )
    return msg
