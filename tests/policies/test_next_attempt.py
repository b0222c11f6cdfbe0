"""policies.next_attempt: the reconcile loop's placement decision, pure: budget, one
plan, the deadline spot policy's live decision, the avoid list and its fallback."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

import gpuopt.policies.next_attempt as next_attempt
from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.next_attempt import (
    Decision,
    JobSoFar,
    Keep,
    NoPlace,
    Placed,
    SpotPolicyInputs,
    Wait,
    decide_next_attempt,
    plan_next_attempt,
)
from gpuopt.policies.placement import PlacementContext
from gpuopt.policies.spot.live import CurrentHold
from gpuopt.policies.spot.model import NOTHING, ON_DEMAND, Hold, Kind, spot
from gpuopt.policies.spot.observed import SpotPlace
from gpuopt.providers.offer import Market
from tests.policies.test_placement import NOW, ctx, offer
from tests.policies.test_placement import spec as _spec

TICK_S = 30.0
GOVERNED = "deadline: 40h\ncheckpoint:\n  dir: /tmp/ckpt\n"  # with spot: auto (default)


def spec(extra: str = "") -> JobSpec:
    return _spec(extra, model="gpt2")


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every plan_job call of the decision."""
    calls: list[object] = []
    real = next_attempt.plan_job

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[2])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(next_attempt, "plan_job", counted)
    return calls


def decide_next(spec: JobSpec, index: OfferIndex, context: PlacementContext, job: JobSoFar,
                spot_inputs: SpotPolicyInputs | None = None) -> Decision:
    planned = plan_next_attempt(spec, index, context, job)
    return decide_next_attempt(spec, index, planned, job, spot_inputs)


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
    got = decide_next(spec(), INDEX, ctx(), _job(budget_micros=5_000_000,
                                                         spent_micros=5_000_000))
    assert isinstance(got, NoPlace) and got.reason.startswith("budget exhausted: spent $5")
    assert plans == []


def test_one_plan_per_decision(plans: list[object]) -> None:
    got = decide_next(spec("budget: 500\n"), INDEX, ctx(top=5),
                              _job(budget_micros=500_000_000, spent_micros=1_000_000))
    assert isinstance(got, Placed) and len(plans) == 1
    assert got.candidate.offer.market is Market.SPOT  # no deadline: the cheapest
    assert got.on_demand_price is not None and str(got.on_demand_price) == "1.00"
    assert plans[0].budget_left is not None and str(plans[0].budget_left) == "499"  # type: ignore[attr-defined]


def test_avoided_places_are_left_out_and_said(plans: list[object]) -> None:
    east = Place("aws", "us-east-1", "us-east-1a")
    got = decide_next(spec("resources:\n  spot: always\n"), INDEX, ctx(),
                              _job(avoid=frozenset({east})))
    # the only spot offer is avoided and nothing else is allowed: the avoid list goes
    assert isinstance(got, Placed) and len(plans) == 2
    assert got.candidate.offer.place == east
    assert "nothing else fits: ignoring the avoid list" in got.note
    assert "avoiding" not in got.note
    plans.clear()
    got = decide_next(spec("resources:\n  spot: never\n"), INDEX, ctx(),
                              _job(avoid=frozenset({Place("aws", "us-east-1")})))
    assert isinstance(got, Placed) and len(plans) == 1
    assert got.candidate.offer.region == "us-west-2"
    assert got.note == "avoiding aws/us-east-1 (repeated preemptions)"


INDEX3 = OfferIndex.build([
    offer("A10G", 1, "1.00", region="us-east-1"),
    offer("A10G", 1, "0.40", Market.SPOT, region="us-east-1", zone="us-east-1b"),
    offer("A10G", 1, "0.45", Market.SPOT, region="us-east-1", zone="us-east-1a"),
    offer("A10G", 1, "0.50", Market.SPOT, region="us-east-1", zone="us-east-1a"),
    offer("A10G", 1, "0.30", Market.SPOT, region="eu-west-1", zone="eu-west-1a"),
])
SPOT_IN = SpotPolicyInputs(policy="auto", tick_s=TICK_S, restart_overhead_s=360.0,
                           observations={})


@pytest.mark.parametrize("hold", ["spot", "on-demand", "wait", "keep"])
def test_the_deadline_policy_decides(hold: str, plans: list[object],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """spot: auto with a deadline: the policy is asked once per decision, on one plan,
    with every allowed spot place of the best spot placement's GPU (cheapest offer per
    place, in place order), the best on-demand price and the job's time and work; its
    answer is followed."""
    asked: list[tuple[object, ...]] = []
    answers: dict[str, Hold] = {"spot": spot(2), "on-demand": ON_DEMAND, "wait": NOTHING,
                                "keep": ON_DEMAND}
    real = next_attempt.decide

    def decide(job: object, locations: object, od: object, history: object,
               policy: str, probe_s: float | None = None,
               tries_left: int | None = None) -> object:
        asked.append((job, locations, od, history, policy))
        got = real(job, locations, od, history, policy, probe_s=probe_s,  # type: ignore[arg-type]
                   tries_left=tries_left)
        return replace(got, hold=answers[hold], keep=hold == "keep",
                       target=locations[2] if hold == "spot" else None)  # type: ignore[index]

    monkeypatch.setattr(next_attempt, "decide", decide)
    deadline = NOW + timedelta(hours=40)
    holding = CurrentHold(Kind.ON_DEMAND, None, 60.0) if hold == "keep" else CurrentHold()
    job = _job(deadline_at=deadline, fraction_left=0.5, holding=holding)
    got = decide_next(spec(GOVERNED), INDEX3, ctx(), job, SPOT_IN)
    assert len(plans) == 1 and len(asked) == 1
    live, locations, od, _history, policy = asked[0]
    assert policy == "auto" and str(od) == "1.00"
    assert [(loc.where.place.zone, str(loc.price_per_hour))  # type: ignore[attr-defined]
            for loc in locations] == [("eu-west-1a", "0.30"), ("us-east-1a", "0.45"),  # type: ignore[attr-defined]
                                      ("us-east-1b", "0.40")]
    assert live.deadline_s == 40 * 3600 and live.elapsed_s == 0  # type: ignore[attr-defined]
    assert live.work_done_s == pytest.approx(live.task_s / 2)  # type: ignore[attr-defined]
    assert live.holding == holding  # type: ignore[attr-defined]
    if hold == "wait":
        assert isinstance(got, Wait) and got.reason.startswith("deadline policy: waiting")
    elif hold == "keep":
        assert isinstance(got, Keep) and got.note.startswith("deadline policy: keeping on-demand")
    else:
        assert isinstance(got, Placed) and got.note.startswith(f"deadline policy: {hold}")
        o = got.candidate.offer
        want = ("spot", "us-east-1b") if hold == "spot" else ("on-demand", None)
        assert (o.market.value, o.zone) == want


def test_the_deadline_policy_ignores_the_avoid_list(plans: list[object]) -> None:
    """Where spot was preempted or missing is in the history the policy reads."""
    east = Place("aws", "us-east-1", "us-east-1b")
    job = _job(deadline_at=NOW + timedelta(hours=40), avoid=frozenset({east}))
    planned = plan_next_attempt(spec(GOVERNED), INDEX3, ctx(), job)
    assert not isinstance(planned, NoPlace)
    assert planned.ctx.avoid == frozenset() and not planned.ctx.spot_slack_check
    assert SpotPlace(east, "g5.xlarge", Market.SPOT) in planned.spot_places or any(
        p.place == east for p in planned.spot_places)


def test_a_governed_job_without_the_policy_inputs_keeps_what_it_holds() -> None:
    job = _job(deadline_at=NOW + timedelta(hours=40),
               holding=CurrentHold(Kind.ON_DEMAND, None, 10.0))
    assert isinstance(decide_next(spec(GOVERNED), INDEX3, ctx(), job), Keep)


def test_without_a_checkpoint_the_plan_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy's model takes the work done to survive a restart: without a checkpoint
    the plan's ranking (which costs the lost work) places the job."""
    monkeypatch.setattr(next_attempt, "decide", lambda *a: pytest.fail("asked"))
    job = _job(deadline_at=NOW + timedelta(hours=40))
    got = decide_next(spec("deadline: 40h\n"), INDEX3, ctx(), job, SPOT_IN)
    assert isinstance(got, Placed) and got.note == ""


def test_no_deadline_no_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(next_attempt, "decide", lambda *a: pytest.fail("asked"))
    got = decide_next(spec(), INDEX, ctx(), _job(), SPOT_IN)
    assert isinstance(got, Placed) and got.note == ""


def test_nothing_fits_says_why() -> None:
    got = decide_next(spec("resources:\n  gpus: [H100]\n"), INDEX, ctx(), _job())
    assert isinstance(got, NoPlace) and got.reason.startswith("no placement fits now: ")
