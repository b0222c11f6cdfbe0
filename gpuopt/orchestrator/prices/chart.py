"""The price-history chart (matplotlib Agg, imported only when a chart is asked for,
through core/lazy_import.py).

The x-axis is the window asked for (``--since`` up to now). A price first seen before the
window (the embedded snapshot's, or one still in force) starts at the window's left edge;
a price seen at one moment only is drawn as a marker, never as a line of one point.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.core.lazy_import import LazyModule

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.price_history import HistoryPoint

# matplotlib, imported when a chart is drawn; pyplot only after the Agg backend is chosen.
matplotlib = LazyModule("matplotlib")
pyplot = LazyModule("matplotlib.pyplot")

MAX_SERIES = 12


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    xs: tuple[datetime, ...]  # the step's corners: each price from, then the last's end
    ys: tuple[float, ...]
    marks: tuple[tuple[datetime, float], ...]  # each observed price, where it starts


def chart_series(points: Sequence[HistoryPoint], since: datetime, until: datetime,
                 ) -> list[Series]:
    """The cheapest MAX_SERIES series of ``points`` clipped to [since, until]."""
    grouped: dict[str, list[HistoryPoint]] = defaultdict(list)
    for p in points:
        o = p.offer
        label = " ".join(x for x in (o.cloud, o.zone or o.region, o.instance_type) if x)
        grouped[label].append(p)
    ranked = sorted(grouped.items(),
                    key=lambda kv: (min(p.offer.price_per_gpu_hour for p in kv[1]), kv[0]))
    out = []
    for label, pts in ranked[:MAX_SERIES]:
        pts = sorted(pts, key=lambda p: p.first_seen)
        xs: list[datetime] = []
        ys: list[float] = []
        for p in pts:
            xs.append(min(max(p.first_seen, since), until))
            ys.append(float(p.offer.price_per_gpu_hour))
        end = min(max(pts[-1].last_seen, xs[-1]), until)
        marks = tuple(zip(xs, ys, strict=True))
        if end > xs[-1]:
            xs.append(end)
            ys.append(ys[-1])
        out.append(Series(label, tuple(xs), tuple(ys), marks))
    return out


def draw_history(ax: Any, points: Sequence[HistoryPoint], since: datetime,
                 until: datetime) -> None:
    """Steps with a marker at every observed price, on an x-axis from ``since`` to
    ``until``."""
    for s in chart_series(points, since, until):
        (line,) = ax.step(s.xs, s.ys, where="post", label=s.label)
        ax.plot([m[0] for m in s.marks], [m[1] for m in s.marks], linestyle="none",
                marker="o", markersize=4, color=line.get_color())
    ax.set_xlim(since, until)


def plot_history(points: Sequence[HistoryPoint], out: Path, title: str, *,
                 since: datetime, until: datetime) -> None:
    """A step chart of USD per GPU-hour per series, written as a PNG to ``out``."""
    matplotlib.use("Agg")
    fig, ax = pyplot.subplots(figsize=(10, 5), dpi=100)
    try:
        draw_history(ax, points, since, until)
        ax.set_title(title)
        ax.set_ylabel("USD per GPU-hour")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="best")
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(out)
    finally:
        pyplot.close(fig)
