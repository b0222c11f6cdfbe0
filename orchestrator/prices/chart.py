"""The price-history chart (matplotlib Agg, imported only when a chart is asked for)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.price_history import HistoryPoint

MAX_SERIES = 12


def plot_history(points: Sequence[HistoryPoint], out: Path, title: str) -> None:
    """A step chart of USD per GPU-hour per series (the cheapest MAX_SERIES series)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, list[HistoryPoint]] = defaultdict(list)
    for p in points:
        o = p.offer
        label = " ".join(x for x in (o.cloud, o.zone or o.region, o.instance_type) if x)
        series[label].append(p)
    ranked = sorted(series.items(), key=lambda kv: min(p.offer.price_per_gpu_hour for p in kv[1]))
    fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    try:
        for label, pts in ranked[:MAX_SERIES]:
            pts.sort(key=lambda p: p.first_seen)
            xs: list[datetime] = []
            ys: list[float] = []
            for p in pts:
                xs.append(p.first_seen)
                ys.append(float(p.offer.price_per_gpu_hour))
            xs.append(pts[-1].last_seen)
            ys.append(ys[-1])
            ax.step(xs, ys, where="post", label=label)  # type: ignore[arg-type]
        ax.set_title(title)
        ax.set_ylabel("USD per GPU-hour")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="best")
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(out)
    finally:
        plt.close(fig)
