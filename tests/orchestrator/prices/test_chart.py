"""The price-history chart (issue 29.7): one-point series as markers, x-axis = --since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.offer import Market, Offer

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
SINCE = NOW - timedelta(days=30)


def _point(price: str, first: datetime, last: datetime, region: str = "us-east-1"):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.price_history import HistoryPoint

    offer = Offer(cloud="aws", region=region, zone=None, instance_type="p5.48xlarge",
                  gpu="H100", gpu_count=8, gpu_memory_gib=80.0, vcpus=192.0, ram_gib=2048.0,
                  market=Market.SPOT, price_per_hour=Decimal(price), observed_at=last,
                  source="api:aws")
    return HistoryPoint(offer, first, last)


def test_single_point_is_a_marker_and_old_points_start_at_the_window() -> None:
    from gpuopt.orchestrator.prices.chart import chart_series

    one = _point("16", NOW - timedelta(days=3), NOW - timedelta(days=3))
    snapshot = _point("24", datetime(2025, 6, 15, tzinfo=UTC), datetime(2025, 6, 15, tzinfo=UTC),
                      region="us-west-2")
    a, b = chart_series([one, snapshot], SINCE, NOW)
    assert a.marks == ((NOW - timedelta(days=3), 2.0),) and len(a.xs) == 1
    assert b.marks == ((SINCE, 3.0),) and all(x >= SINCE for x in b.xs)


def test_steps_run_to_the_last_sighting() -> None:
    from gpuopt.orchestrator.prices.chart import chart_series

    pts = [_point("16", SINCE - timedelta(days=2), NOW - timedelta(days=10)),
           _point("20", NOW - timedelta(days=10), NOW - timedelta(days=1))]
    (s,) = chart_series(pts, SINCE, NOW)
    assert s.xs == (SINCE, NOW - timedelta(days=10), NOW - timedelta(days=1))
    assert s.ys == (2.0, 2.5, 2.5) and len(s.marks) == 2


def test_png_axis_is_the_window(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    from gpuopt.orchestrator.prices.chart import draw_history, plot_history

    one = _point("16", NOW - timedelta(days=3), NOW - timedelta(days=3))
    fig, ax = plt.subplots()
    try:
        draw_history(ax, [one], SINCE, NOW)
        lo, hi = ax.get_xlim()
        assert (lo, hi) == (mdates.date2num(SINCE), mdates.date2num(NOW))
        markers = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
        assert len(markers) == 1 and len(markers[0].get_xdata()) == 1
    finally:
        plt.close(fig)
    out = tmp_path / "h.png"
    plot_history([one], out, "H100 spot", since=SINCE, until=NOW)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
