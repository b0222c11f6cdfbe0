"""Charts as PNG bytes (matplotlib's Agg canvas, imported on first use through
core/lazy_import.py; no pyplot global state).

Floats appear only here, to draw: every figure printed next to a chart comes from the
exact Decimals of the report.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gpuopt.core.lazy_import import LazyModule
from gpuopt.orchestrator.report.fmt import pct, usd
from gpuopt.orchestrator.report.model import WeeklyReport, percent

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib's modules, imported when the first chart is drawn (gpuopt --help stays fast).
mpl_figure = LazyModule("matplotlib.figure")
backend_agg = LazyModule("matplotlib.backends.backend_agg")
mpl_ticker = LazyModule("matplotlib.ticker")

DAILY = "daily-spend"
VERSUS = "vs-on-demand"
# Titles are the HTML headings and the images' alt text (not drawn inside the images).
CHART_TITLES = {
    DAILY: "Daily spend by cloud",
    VERSUS: "Spend against its on-demand equivalent",
}
_OTHER_COLORS = ("#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f")
PAID_COLOR = "#2f7d4f"
ON_DEMAND_COLOR = "#c9ced6"
_WIDTH_IN, _DPI = 6.4, 150


def cloud_color(cloud: str, index: int) -> str:
    """The registry's colour for a known cloud (providers/clouds.py), else a spare one."""
    from gpuopt.providers.clouds import find_cloud

    entry = find_cloud(cloud)
    return entry.chart_color if entry is not None else _OTHER_COLORS[index % len(_OTHER_COLORS)]


def cloud_label(cloud: str) -> str:
    """The registry's display name of a known cloud (AWS, GCP, Azure), else the name."""
    from gpuopt.providers.clouds import find_cloud

    entry = find_cloud(cloud)
    return entry.display_name if entry is not None else cloud


def render_charts(report: WeeklyReport) -> dict[str, bytes]:
    """{chart name: PNG bytes} for DAILY and VERSUS."""
    return {DAILY: daily_spend_png(report), VERSUS: versus_on_demand_png(report)}


def _figure(height_in: float) -> Figure:
    fig: Figure = mpl_figure.Figure(figsize=(_WIDTH_IN, height_in), dpi=_DPI,
                                    layout="constrained")
    return fig


def _png(fig: Figure) -> bytes:
    backend_agg.FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", facecolor="white")
    return buf.getvalue()


def _style(ax: Any) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.spines["left"].set_color("#999999")
    ax.spines["bottom"].set_color("#999999")
    ax.tick_params(colors="#333333", labelsize=9)
    ax.set_axisbelow(True)


# Below this axis maximum (USD) ticks and labels show cents: a week of demo runs costs
# fractions of a dollar, and "$0 $0 $1" says nothing.
CENTS_BELOW = 10.0


def money_tick(top: float) -> Callable[[float, object], str]:
    """Tick label for an axis whose largest value is ``top`` USD: cents when small."""
    places = 2 if top < CENTS_BELOW else 0

    def label(value: float, _pos: object = None) -> str:
        return f"${value:,.{places}f}"

    return label


def bar_label(amount: Decimal) -> str:
    """A bar's label: whole dollars from $100 up ($1,234), else with cents ($0.42)."""
    text = usd(amount)
    return text.split(".")[0] if abs(amount) >= 100 else text


def _dollars(ax: Any, axis: str, top: float) -> None:
    formatter = mpl_ticker.FuncFormatter(money_tick(top))
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(formatter)


def daily_spend_png(report: WeeklyReport) -> bytes:
    fig = _figure(3.0)
    ax = fig.add_subplot()
    days = [d.day.strftime("%a\n%d %b") for d in report.daily]
    x = list(range(len(days)))
    bottom = [0.0] * len(days)
    for i, cloud in enumerate(report.clouds):
        values = [float(dict(d.by_cloud)[cloud]) for d in report.daily]
        ax.bar(x, values, 0.62, bottom=bottom, label=cloud_label(cloud),
               color=cloud_color(cloud, i))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    top = max(bottom, default=0.0)
    for xi, d in zip(x, report.daily, strict=True):
        if d.total > 0:
            ax.annotate(bar_label(d.total), (xi, float(d.total)), ha="center",
                        va="bottom", fontsize=8, color="#333333", xytext=(0, 2),
                        textcoords="offset points")
    ax.set_xticks(x, days)
    ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    ax.set_ylabel("Spend (USD)", fontsize=9, color="#333333")
    ax.set_xlabel(f"Day ({report.timezone})", fontsize=9, color="#333333")
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.8)
    _dollars(ax, "y", top * 1.15)
    _style(ax)
    if report.clouds:
        ax.legend(frameon=False, fontsize=9, ncols=len(report.clouds), loc="lower left",
                  bbox_to_anchor=(0, 1.0), borderaxespad=0.2)
    return _png(fig)


def versus_on_demand_png(report: WeeklyReport) -> bytes:
    rows = [("All clouds", report.summary.total, report.summary.on_demand)]
    rows += [(s.key, s.cost, s.on_demand) for s in report.by_cloud]
    fig = _figure(0.8 + 0.55 * len(rows))
    ax = fig.add_subplot()
    y = list(range(len(rows)))[::-1]
    h = 0.38
    ax.barh([v + h / 2 for v in y], [float(r[2]) for r in rows], h, color=ON_DEMAND_COLOR,
            label="On-demand equivalent")
    ax.barh([v - h / 2 for v in y], [float(r[1]) for r in rows], h, color=PAID_COLOR,
            label="Paid")
    top = max((float(r[2]) for r in rows), default=0.0)
    for yi, (_, paid, od) in zip(y, rows, strict=True):
        saved = pct(percent(od - paid, od))
        ax.annotate(f"{bar_label(paid)}  (saved {saved})", (float(paid), yi - h / 2),
                    va="center", fontsize=8, xytext=(3, 0), textcoords="offset points",
                    color="#333333")
    ax.set_yticks(y, [r[0] for r in rows], fontsize=9)
    ax.set_xlim(0, top * 1.3 if top > 0 else 1)
    ax.set_xlabel("USD this week", fontsize=9, color="#333333")
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.8)
    _dollars(ax, "x", top * 1.3)
    _style(ax)
    ax.legend(frameon=False, fontsize=9, ncols=2, loc="lower left", bbox_to_anchor=(0, 1.0),
              borderaxespad=0.2)
    return _png(fig)
