"""The sentences a plan says: why the top pick wins, how far each other row is from it,
the money the budget lacks."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal

from gpuopt.policies.plan.model import CENT, Candidate
from gpuopt.providers.offer import Offer


def budget_miss(cheapest: Candidate, budget: Decimal) -> str:
    """'needs at least $10.18: T4 x1 spot aws/us-east-1; your budget leaves $0.50'."""
    o = cheapest.offer
    return (f"needs at least {money_up(cheapest.expected_cost)}: {o.gpu} x{o.gpu_count} "
            f"{o.market.value} {o.cloud}/{where(o)}; your budget leaves {money(budget)}")


def money_up(x: Decimal) -> str:
    """Rounded up to the cent: a budget of this much is enough."""
    return f"${x.quantize(CENT, rounding=ROUND_CEILING):,}"


def costlier_than_top(c: Candidate, top: Candidate) -> str:
    return f"{money(c.expected_cost - top.expected_cost)} more than the top pick"


def slower_than_top(c: Candidate, top: Candidate) -> str:
    return f"{c.expected_hours - top.expected_hours:.1f} h slower than the top pick"


def head_of(c: Candidate) -> str:
    """'H100 x8 spot in aws us-east-1a', '2 nodes of H100 x8 ... over EFA 3200 Gbps',
    'H100 x1 on-demand in any of 48 RunPod data centres' (a "global" offer not pinned)."""
    o = c.offer
    over = f" over {c.fabric.label}" if c.fabric is not None and c.nodes > 1 else ""
    return f"{c.shape} {o.market.value} in {c.where or f'{o.cloud} {where(o)}'}{over}"


def fastest_reason(top: Candidate) -> str:
    return (f"{head_of(top)}: the fastest within the limits: {top.expected_hours:.1f} h for "
            f"{money(top.expected_cost)}")


def where(o: Offer) -> str:
    return o.zone or o.region


def money(x: Decimal) -> str:
    return f"${x.quantize(CENT, rounding=ROUND_HALF_EVEN):,}"


def ratio(r: float) -> str:
    """1.8x; close to 1 with two decimals, so a 4% difference does not read as 1.0x."""
    return f"{r:.2f}x" if r < 1.095 else f"{r:.1f}x"


def costs_vs(a: Decimal, b: Decimal) -> str:
    """$a vs $b, to the cent; to 1/100 cent when the cents are the same (small jobs)."""
    if money(a) != money(b):
        return f"{money(a)} vs {money(b)}"
    def fine(x: Decimal) -> str:
        return f"${x.quantize(Decimal('0.0001'), rounding=ROUND_HALF_EVEN):,}"

    return f"{fine(a)} vs {fine(b)}"


def top_reason(top: Candidate, others: Sequence[Candidate]) -> str:
    """One sentence on why the top pick wins, against the best other GPU model."""
    head = head_of(top)
    other = min(others, key=lambda c: c.expected_cost, default=None)
    if other is None:
        cost = money(top.expected_cost)
        return f"{head}: the only GPU model that fits within the limits: {cost}"
    p_top, p_other = top.price_per_hour, other.price_per_hour
    vs = costs_vs(top.expected_cost, other.expected_cost)
    name = other.shape
    if p_top > p_other > 0:
        speed = other.est_hours / top.est_hours if top.est_hours > 0 else float("inf")
        return (f"{head}: {ratio(float(p_top / p_other))} the price per hour of {name} but "
                f"{ratio(speed)} faster: {vs}")
    if top.est_hours > other.est_hours > 0:
        return (f"{head}: {ratio(top.est_hours / other.est_hours)} slower than {name} but "
                f"cheaper per hour: {vs}")
    return f"{head}: cheaper per hour and at least as fast as {name}: {vs}"


