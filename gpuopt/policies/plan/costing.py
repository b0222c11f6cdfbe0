"""What a placement is expected to cost: the hours a preemption loses, the expected hours
and preemptions of a spot run, the exact (Decimal) cost, and what the search keeps of a
placement until it becomes a ``Candidate``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import NamedTuple

from gpuopt.core.money import MICRO_USD
from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.hazard import preemptions_per_hour
from gpuopt.policies.plan.configurations import Configuration
from gpuopt.policies.plan.model import Candidate
from gpuopt.providers.offer import Offer


def lost_hours_per_preemption(spec: JobSpec, est_hours: float, overhead: float) -> float:
    """Restart overhead plus, on average, half a checkpoint interval of lost work.

    Without checkpoints a preemption loses on average half of the run so far.
    """
    if spec.checkpoint is None:
        return overhead + est_hours / 2
    interval = spec.checkpoint.interval / timedelta(hours=1)
    return overhead + min(interval, est_hours) / 2


class SpotRun(NamedTuple):
    """A spot placement's expected preemptions and hours, and where its hazard came from."""

    expected_hours: float
    expected_preemptions: float
    hazard_source: str  # "cloud advisor" | "observed" | "default"


def spot_run(offer: Offer, advisor_hazard: float, config: Configuration, lost: float,
             observed: Mapping[Place, tuple[int, float]], defaults: Mapping[str, float]
             ) -> SpotRun:
    """Any node preempted is a preemption of the job: N x one node's hazard, each losing
    ``lost`` hours. ``advisor_hazard`` < 0: the offer has no advisor bucket."""
    if advisor_hazard >= 0:
        hazard, source = advisor_hazard, "cloud advisor"
    else:
        hazard, source = preemptions_per_hour(offer, observed, defaults)
    n_pre = hazard * config.nodes * config.hours
    return SpotRun(config.hours + n_pre * lost, n_pre, source)


def exact_cost(offer: Offer, expected: float, nodes: int = 1) -> Decimal:
    """The expected cost to the micro-dollar: price x nodes x expected hours."""
    return (offer.price_per_hour * nodes * Decimal(repr(expected))).quantize(
        MICRO_USD, rounding=ROUND_HALF_EVEN)


class Kept(NamedTuple):
    """What the search keeps of a placement; a Candidate is made for the survivors only.
    ``cost`` is None until the search needs it exactly (see search.py)."""

    offer: Offer
    config: Configuration
    expected_hours: float
    cost: Decimal | None
    expected_preemptions: float
    hazard_source: str

    def exact(self) -> Decimal:
        cost = self.cost
        return cost if cost is not None else exact_cost(self.offer, self.expected_hours,
                                                        self.config.nodes)

    def candidate(self) -> Candidate:
        cfg = self.config
        return Candidate(self.offer, cfg.fit, cfg.runtime, cfg.hours, self.expected_hours,
                         self.exact(), self.expected_preemptions, self.hazard_source,
                         nodes=cfg.nodes, fabric=cfg.fabric)
