"""Small server-side SVG charts for the dashboard (no script): a step chart of prices
over time, and horizontal bars. Pure functions of their data; the page escapes labels."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from html import escape

W, H, PAD = 640, 240, 48
LEGEND = 200  # room on the right of a step chart for its series' labels
COLORS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563")


def step_chart(series: Sequence[tuple[str, Sequence[tuple[datetime, Decimal]]]],
               unit: str = "$/GPU-h") -> str:
    """One line per series (label, [(time, value)] oldest first), held between points."""
    points = [p for _, pts in series for p in pts]
    if not points:
        return ""
    t0 = min(t for t, _ in points).timestamp()
    t1 = max(t for t, _ in points).timestamp()
    top = float(max(v for _, v in points)) * 1.1 or 1.0
    span = (t1 - t0) or 1.0

    right = W - LEGEND

    def x(t: datetime) -> float:
        return PAD + (t.timestamp() - t0) / span * (right - PAD)

    def y(v: Decimal) -> float:
        return H - PAD - float(v) / top * (H - 2 * PAD)

    out = [f'<svg viewBox="0 0 {W} {H}" role="img" class="chart" '
           f'aria-label="price history, {escape(unit)}">',
           f'<line x1="{PAD}" y1="{H - PAD}" x2="{right}" y2="{H - PAD}" stroke="#999"/>',
           f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#999"/>']
    for frac in (0.0, 0.5, 1.0):
        value = top / 1.1 * frac
        out.append(f'<text x="{PAD - 4}" y="{y(Decimal(str(value))) + 4:.1f}" '
                   f'text-anchor="end" font-size="11">{value:.2f}</text>')
    first = datetime.fromtimestamp(t0, UTC).strftime("%Y-%m-%d")
    last = datetime.fromtimestamp(t1, UTC).strftime("%Y-%m-%d")
    out.append(f'<text x="{PAD}" y="{H - PAD + 16}" font-size="11">{first}</text>')
    out.append(f'<text x="{right}" y="{H - PAD + 16}" font-size="11" '
               f'text-anchor="end">{last}</text>')
    for i, (label, pts) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        path = []
        for j, (t, v) in enumerate(pts):
            path.append(f"M{x(t):.1f},{y(v):.1f}" if j == 0
                        else f"H{x(t):.1f} V{y(v):.1f}")
        path.append(f"H{right}")
        out.append(f'<path d="{" ".join(path)}" fill="none" stroke="{color}" '
                   f'stroke-width="2"><title>{escape(label)}</title></path>')
        out.append(f'<text x="{right + 8}" y="{PAD + 16 * i}" font-size="11" '
                   f'fill="{color}">{escape(label[:32])}</text>')
    out.append("</svg>")
    return "".join(out)


def bars(rows: Sequence[tuple[str, Decimal]], unit: str = "$") -> str:
    """Horizontal bars, one per (label, value), largest value full width."""
    if not rows:
        return ""
    top = max((float(v) for _, v in rows), default=0.0) or 1.0
    height = 22 * len(rows) + 8
    out = [f'<svg viewBox="0 0 {W} {height}" role="img" class="chart bars">']
    for i, (label, value) in enumerate(rows):
        width = max(1.0, float(value) / top * (W - 260))
        yy = 4 + 22 * i
        out.append(f'<text x="150" y="{yy + 14}" text-anchor="end" font-size="12">'
                   f'{escape(label[:22])}</text>')
        out.append(f'<rect x="158" y="{yy}" width="{width:.1f}" height="16" '
                   f'fill="{COLORS[0]}"/>')
        out.append(f'<text x="{162 + width:.1f}" y="{yy + 13}" font-size="12">'
                   f'{escape(unit)}{value:,.2f}</text>')
    out.append("</svg>")
    return "".join(out)
