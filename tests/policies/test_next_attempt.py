"""policies.placement.decide_next_attempt: the reconcile loop's placement decision, pure:
budget, one plan, the spot hold, the avoid list and its fallback."""

from __future__ import annotations

from datetime import timedelta

import pytest

import gpuopt.policies.placement as placement
from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import JobSoFar, NoPlace, Placed, Wait, decide_next_attempt
from gpuopt.providers.offer import Market
from tests.policies.test_placement import NOW, ctx, offer
from tests.policies.test_placement import spec as _spec

TICK_S = 30.0


def spec(extra: str = "") -> JobSpec:
    return _spec(extra, model="gpt2")


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every plan_job call of the decision."""
    calls: list[object] = []
    real = placement.plan_job

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[2])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(placement, "plan_job", counted)
    return calls


def _job(**kw: object) -> JobSoFar:
    base: dict[str, object] = dict(submitted_at=NOW, deadline_at=None, budget_micros=None,
                                   spent_micros=0)
    return JobSoFar(**{**base, **kw})  # type: ignore[arg-type]


INDEX = OfferIndex.build([
    offer("A10G", 1, "1.00", region="us-east-1"),
    offer("A10G", 1, "0.40", Market.SPOT, region="us-east-1", zone="us-east-1a"),
    offer("A10G", 1, "1.10", region="us-west-2"),
])


def test_an_exhausted_budget_fails_without_planning(plans: list[object]) -> None:
    got = decide_next_attempt(spec(), INDEX, ctx(), _job(budget_micros=5_000_000,
                                                         spent_micros=5_000_000), TICK_S)
    assert isinstance(got, NoPlace) and got.reason.startswith("budget exhausted: spent $5")
    assert plans == []


def test_one_plan_per_decision(plans: list[object]) -> None:
    got = decide_next_attempt(spec("budget: 500\n"), INDEX, ctx(top=5),
                              _job(budget_micros=500_000_000, spent_micros=1_000_000), TICK_S)
    assert isinstance(got, Placed) and len(plans) == 1
    assert got.candidate.offer.market is Market.SPOT  # no deadline: the cheapest
    assert got.on_demand_price is not None and str(got.on_demand_price) == "1.00"
    assert plans[0].budget_left is not None and str(plans[0].budget_left) == "499"  # type: ignore[attr-defined]


def test_avoided_places_are_left_out_and_said(plans: list[object]) -> None:
    east = Place("aws", "us-east-1", "us-east-1a")
    got = decide_next_attempt(spec("resources:\n  spot: always\n"), INDEX, ctx(),
                              _job(avoid=frozenset({east})), TICK_S)
    # the only spot offer is avoided and nothing else is allowed: the avoid list goes
    assert isinstance(got, Placed) and len(plans) == 2
    assert got.candidate.offer.place == east
    assert "nothing else fits: ignoring the avoid list" in got.note
    assert "avoiding" not in got.note
    plans.clear()
    got = decide_next_attempt(spec("resources:\n  spot: never\n"), INDEX, ctx(),
                              _job(avoid=frozenset({Place("aws", "us-east-1")})), TICK_S)
    assert isinstance(got, Placed) and len(plans) == 1
    assert got.candidate.offer.region == "us-west-2"
    assert got.note == "avoiding aws/us-east-1 (repeated preemptions)"


@pytest.mark.parametrize("hold", ["spot", "on-demand", "wait"])
def test_the_deadline_policy_decides_the_market(hold: str, plans: list[object],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """spot: auto with a deadline: the spot hold is asked with the plan's best on-demand
    and best spot placements, and its answer is followed, all on one plan."""
    from gpuopt.policies.spot import hold as holds

    asked: list[dict[str, object]] = []
    answer = {"spot": holds.SPOT_ALLOWED, "on-demand": holds.ON_DEMAND_ONLY,
              "wait": holds.WAIT}[hold]

    def choose(**kw: object) -> holds.HoldChoice:
        asked.append(kw)
        return answer

    monkeypatch.setattr(placement, "choose_hold", choose)
    deadline = NOW + timedelta(hours=40)
    got = decide_next_attempt(spec("deadline: 40h\n"), INDEX, ctx(),
                              _job(deadline_at=deadline, fraction_left=0.5), TICK_S)
    assert len(plans) == 1 and len(asked) == 1
    assert str(asked[0]["spot_price"]) == "0.40" and str(asked[0]["on_demand_price"]) == "1.00"
    assert asked[0]["fraction_left"] == 0.5 and asked[0]["deadline_s"] == 40 * 3600
    if hold == "wait":
        assert got == Wait(holds.WAIT.wait or "")
        return
    assert isinstance(got, Placed) and got.note == answer.note
    want = Market.SPOT if hold == "spot" else Market.ON_DEMAND
    assert got.candidate.offer.market is want


def test_no_deadline_no_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "choose_hold", lambda **kw: pytest.fail("asked"))
    got = decide_next_attempt(spec(), INDEX, ctx(), _job(), TICK_S)
    assert isinstance(got, Placed) and got.note == ""


def test_nothing_fits_says_why() -> None:
    got = decide_next_attempt(spec("resources:\n  gpus: [H100]\n"), INDEX, ctx(), _job(),
                              TICK_S)
    assert isinstance(got, NoPlace) and got.reason.startswith("no placement fits now: ")
