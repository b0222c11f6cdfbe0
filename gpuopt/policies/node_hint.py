"""Would more nodes than the job allows be cheaper (faster), or the only fit? Pure.

``resources.max_nodes`` defaults to 1, so a job never spans machines unless its author
says so; `gpuopt plan` asks this module whether saying so would pay, by planning the job
again with room for more nodes and comparing the picks.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_HALF_EVEN, Decimal

from gpuopt.jobs.spec import MAX_NODES, JobSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import Candidate, PlacementContext, Plan, plan_job

# How far the hint looks: up to this many nodes (or twice the job's limit, if more).
HINT_NODES = 8


def _money(x: Decimal) -> str:
    return f"${x.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"


def _shape(c: Candidate) -> str:
    fabric = f" over {c.fabric.label}" if c.fabric is not None else ""
    return f"{c.nodes} nodes of {c.offer.gpu_count}x{c.offer.gpu} ({c.offer.cloud}{fabric})"


def more_nodes_hint(spec: JobSpec, index: OfferIndex, ctx: PlacementContext,
                    plan: Plan) -> str | None:
    """One line when a placement on more nodes than ``resources.max_nodes`` allows is
    the only one within the limits, or cheaper (``minimize: time``: faster) than the
    plan's pick; None otherwise."""
    have = ctx.max_nodes if ctx.max_nodes is not None else spec.resources.max_nodes
    room = min(MAX_NODES, max(HINT_NODES, 2 * have))
    if room <= have:
        return None
    wider = plan_job(spec, index, replace(ctx, max_nodes=room, top=1))
    alt = wider.best
    if alt is None or alt.nodes <= have:
        return None
    fix = f"set resources.max_nodes: {alt.nodes}"
    best = plan.best
    if best is None:
        what = "the only fit" if plan.nearest_miss else "the only placement within the limits"
        return f"{_shape(alt)} would be {what}: {fix}"
    if ctx.minimize == "time":
        if alt.expected_hours < best.expected_hours:
            return (f"{_shape(alt)} would be faster ({alt.expected_hours:.1f} h vs "
                    f"{best.expected_hours:.1f} h): {fix}")
        return None
    if alt.expected_cost < best.expected_cost:
        return (f"{_shape(alt)} would be cheaper ({_money(alt.expected_cost)} vs "
                f"{_money(best.expected_cost)}): {fix}")
    return None
