"""policies.spot.hold: the deadline-aware spot policy on a job's next attempt."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuopt.policies.spot.hold import (
    ON_DEMAND_ONLY,
    SPOT_ALLOWED,
    WAIT,
    choose_hold,
    spot_now_history,
)
from gpuopt.policies.spot.model import NOTHING, Observation
from gpuopt.policies.spot.registry import DEFAULT_POLICY, get_policy
from gpuopt.providers.offer import Market

H = 3600.0


def _choose(elapsed_h: float, deadline_h: float, left_h: float, fraction: float = 1.0,
            **kw: object) -> object:
    return choose_hold(elapsed_s=elapsed_h * H, deadline_s=deadline_h * H,
                       work_left_s=left_h * H, fraction_left=fraction,
                       restart_overhead_s=0.1 * H, spot_price=Decimal("1.0"),
                       on_demand_price=Decimal("3.0"), tick_s=30.0, **kw)  # type: ignore[arg-type]


def test_no_slack_left_means_on_demand() -> None:
    got = _choose(elapsed_h=9.0, deadline_h=10.0, left_h=0.95)
    assert got == ON_DEMAND_ONLY and got.markets == (Market.ON_DEMAND,)


def test_plenty_of_slack_allows_spot_or_waits() -> None:
    got = _choose(elapsed_h=0.0, deadline_h=100.0, left_h=2.0)
    assert got in (SPOT_ALLOWED, WAIT)
    assert got.markets is None


def test_it_is_the_registered_policy_on_the_same_observation() -> None:
    """The glue hands the policy exactly today's observation: nothing held, spot on
    offer now, a history of that one observation, the whole task from the work left."""
    for elapsed, deadline, left, fraction in [(0, 100, 2, 1.0), (9, 10, 0.95, 0.5),
                                              (5, 12, 3, 0.25), (0, 3, 2.5, 1.0)]:
        task = left * H / fraction
        obs = Observation(
            elapsed_s=elapsed * H, deadline_s=deadline * H, task_s=task,
            work_done_s=task - left * H, restart_overhead_s=0.1 * H, overhead_left_s=0.0,
            holding=NOTHING, spot_available=(True,), spot_prices=(Decimal("1.0"),),
            on_demand_price=Decimal("3.0"), tick_s=30.0,
            history=spot_now_history((True,), 30.0))
        expected = {"on-demand": ON_DEMAND_ONLY, "none": WAIT, "spot": SPOT_ALLOWED}[
            get_policy(DEFAULT_POLICY).decide(obs).kind.value]
        assert _choose(elapsed, deadline, left, fraction) == expected


@pytest.mark.parametrize("fraction", [0.0, -1.0])
def test_a_job_reported_done_still_has_a_task(fraction: float) -> None:
    assert _choose(0.0, 10.0, 1.0, fraction) in (ON_DEMAND_ONLY, SPOT_ALLOWED, WAIT)


def test_the_history_is_an_input() -> None:
    """Issue 16 feeds observed availability here; today's default is one observation."""
    seen = spot_now_history((True,), 30.0)
    assert _choose(0.0, 100.0, 2.0, history=seen) == _choose(0.0, 100.0, 2.0)
