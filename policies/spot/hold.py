"""The deadline-aware spot policy applied to a job's next attempt (the daemon's glue).

``gpuopt simulate`` replays a spot policy tick by tick; the reconcile loop asks the same
policy (policies.spot.registry's default) once per placement of a ``spot: auto`` job
with a deadline: may the next attempt be spot, must it be on-demand, or should it wait?
``choose_hold`` is that question as a pure function of what is held now, the time, the
work done and left, and what is known of spot availability. Today the daemon knows only
that spot is on offer now (``spot_now_history``); issue 16 feeds the availability it
observes into the same ``history`` argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.model import NOTHING, Hold, Kind, Observation
from gpuopt.policies.spot.registry import DEFAULT_POLICY, get_policy
from gpuopt.providers.offer import Market

MIN_REMAINING = 0.001  # a job reported done but not exited still needs a machine


@dataclass(frozen=True, slots=True)
class HoldChoice:
    """``markets``: what the next attempt may hold (None: the spec's markets, spot
    allowed); ``wait``: the reason to launch nothing now (None: launch); ``note``: why,
    for the job's events."""

    markets: tuple[Market, ...] | None = None
    note: str = ""
    wait: str | None = None


UNDECIDED = HoldChoice()  # the policy does not apply: the plain ranking decides
ON_DEMAND_ONLY = HoldChoice((Market.ON_DEMAND,),
                            "deadline policy: on-demand (no slack left for spot)")
SPOT_ALLOWED = HoldChoice(None, "deadline policy: spot allowed")
WAIT = HoldChoice(None, "", "deadline policy: waiting (slack to spare, spot not worth it yet)")


def spot_now_history(available: Sequence[bool], tick_s: float) -> AvailabilityHistory:
    """The history of a daemon that knows only what is on offer now: one observation."""
    return AvailabilityHistory.empty(len(available)).observe(tuple(available), tick_s)


def choose_hold(
    *,
    holding: Hold = NOTHING,
    elapsed_s: float,
    deadline_s: float,
    work_left_s: float,
    fraction_left: float,
    restart_overhead_s: float,
    overhead_left_s: float = 0.0,
    spot_price: Decimal,
    on_demand_price: Decimal,
    tick_s: float,
    spot_available: tuple[bool, ...] = (True,),
    history: AvailabilityHistory | None = None,
    policy: str = DEFAULT_POLICY,
) -> HoldChoice:
    """What the next attempt may hold.

    ``holding``: what the job holds now (NOTHING when its last attempt ended) and
    ``overhead_left_s`` its restart overhead still to run;
    ``elapsed_s`` / ``deadline_s``: since submit; ``work_left_s``: uninterrupted seconds
    of work left on the best on-demand placement, ``fraction_left`` the part of the job
    that is (from its progress reports), so the whole task is ``work_left_s /
    fraction_left``; ``spot_available`` and ``history`` (which already includes this
    observation; default: ``spot_now_history``) what is known of spot, per location.
    """
    task_s = work_left_s / max(fraction_left, MIN_REMAINING)
    obs = Observation(
        elapsed_s=elapsed_s,
        deadline_s=deadline_s,
        task_s=task_s,
        work_done_s=task_s - work_left_s,
        restart_overhead_s=restart_overhead_s,
        overhead_left_s=overhead_left_s,
        holding=holding,
        spot_available=spot_available,
        spot_prices=(spot_price,) * len(spot_available),
        on_demand_price=on_demand_price,
        tick_s=tick_s,
        history=history or spot_now_history(spot_available, tick_s),
    )
    hold = get_policy(policy).decide(obs)
    if hold.kind is Kind.ON_DEMAND:
        return ON_DEMAND_ONLY
    if hold.kind is Kind.NONE:
        return WAIT
    return SPOT_ALLOWED
