"""The HTML report as files (HTML + PNGs beside it) or as one self-contained page."""

from __future__ import annotations

import base64
from pathlib import Path

from gpuopt.orchestrator.report.charts import render_charts
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.render_html import render_html


def write_html_report(report: WeeklyReport, path: Path) -> list[Path]:
    """Write ``path`` and its charts as ``<stem>-<chart>.png`` beside it (relative links)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    src = {}
    for name, png in render_charts(report).items():
        image = path.with_name(f"{path.stem}-{name}.png")
        image.write_bytes(png)
        written.append(image)
        src[name] = image.name
    path.write_text(render_html(report, src), encoding="utf-8")
    return [path, *written]


def self_contained_html(report: WeeklyReport) -> str:
    """The page with its charts as data: URIs (for a browser; mail clients block these)."""
    src = {
        name: "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        for name, png in render_charts(report).items()
    }
    return render_html(report, src)
