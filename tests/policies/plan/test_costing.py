from __future__ import annotations

from decimal import Decimal

from gpuopt.core.places import Place
from gpuopt.policies.plan.costing import (
    Kept,
    exact_cost,
    lost_hours_per_preemption,
    spot_run,
)
from gpuopt.providers.offer import Market
from tests.policies.plan.helpers import configuration, job, offer


def test_a_preemption_loses_the_restart_and_half_a_checkpoint_interval() -> None:
    with_ckpt = job("checkpoint:\n  dir: /tmp/ck\n  interval: 30m\n")
    assert lost_hours_per_preemption(with_ckpt, 10.0, 0.1) == 0.1 + 0.25
    assert lost_hours_per_preemption(with_ckpt, 0.2, 0.1) == 0.1 + 0.1  # shorter run
    assert lost_hours_per_preemption(job(), 10.0, 0.1) == 0.1 + 5.0  # half the run


def test_spot_run_uses_the_advisor_hazard_when_the_offer_has_one() -> None:
    cfg = configuration(job(), "L4")
    spot = offer("L4", 1, "0.3", Market.SPOT, zone="us-east-1a", bucket=2)
    run = spot_run(spot, 0.05, cfg, lost=1.0, observed={}, defaults={"aws": 0.5})
    assert run.hazard_source == "cloud advisor"
    assert run.expected_preemptions == 0.05 * cfg.hours
    assert run.expected_hours == cfg.hours + 0.05 * cfg.hours * 1.0


def test_spot_run_without_an_advisor_bucket_takes_what_was_observed() -> None:
    cfg = configuration(job(), "L4")
    spot = offer("L4", 1, "0.3", Market.SPOT, zone="us-east-1a")
    observed = {Place("aws", "us-east-1"): (3, 100.0)}
    run = spot_run(spot, -1.0, cfg, lost=2.0, observed=observed, defaults={"aws": 0.5})
    assert run.hazard_source == "observed"
    assert run.expected_hours == cfg.hours + 0.03 * cfg.hours * 2.0
    default = spot_run(spot, -1.0, cfg, lost=2.0, observed={}, defaults={"aws": 0.5})
    assert default.hazard_source == "default" and default.expected_preemptions == 0.5 * cfg.hours


def test_exact_cost_is_price_x_nodes_x_hours_to_the_micro_dollar() -> None:
    o = offer("L4", 1, "0.7")
    assert exact_cost(o, 1.0 / 3) == Decimal("0.233333")
    assert exact_cost(o, 2.0, nodes=3) == Decimal("4.200000")


def test_a_kept_placement_is_costed_exactly_when_asked_if_it_was_not_yet() -> None:
    cfg = configuration(job(), "L4")
    o = offer("L4", 1, "0.7")
    lazy = Kept(o, cfg, 3.0, None, 0.0, "")
    assert lazy.exact() == Decimal("2.100000")
    assert Kept(o, cfg, 3.0, Decimal("9"), 0.0, "").exact() == Decimal("9")
    c = lazy.candidate()
    assert (c.expected_cost, c.expected_hours, c.est_hours) == (Decimal("2.100000"), 3.0,
                                                                cfg.hours)
