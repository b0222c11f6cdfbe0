"""What a plan is made of: the context a job is planned in, the placements it ranks
(``Candidate``), the GPU models it leaves out (``Exclusion``) and the ``Plan`` itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Literal

from gpuopt.core.places import Place
from gpuopt.jobs.estimate.calibration import Calibration
from gpuopt.jobs.estimate.fit import Fit
from gpuopt.jobs.estimate.runtime import RuntimeEstimate, hours_interval
from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS
from gpuopt.providers.clouds import default_preemptions_per_hour
from gpuopt.providers.fabrics import Fabric
from gpuopt.providers.offer import Market, Offer

CENT = Decimal("0.01")
BUYABLE = (Market.ON_DEMAND, Market.SPOT)


@dataclass(frozen=True, slots=True)
class OwnedReserved:
    """Reserved capacity the team already pays for (configuration [reserved])."""

    cloud: str
    region: str
    instance_type: str
    count: int  # instances free for gpuopt


@dataclass(frozen=True, slots=True)
class PlacementContext:
    now: datetime
    deadline_at: datetime | None = None
    budget_left: Decimal | None = None  # None: the spec's budget, untouched
    remaining_fraction: float = 1.0  # of the job's work (re-placement after progress)
    restart_overhead_hours: float = RESTART_OVERHEAD_HOURS
    # region -> (spot preemptions seen there, spot hours held there), from the ledger
    observed_preemptions: Mapping[Place, tuple[int, float]] = field(default_factory=dict)
    default_preemptions: Mapping[str, float] = field(
        default_factory=default_preemptions_per_hour
    )
    # places to stay away from for a while (repeated preemptions)
    avoid: frozenset[Place] = frozenset()
    owned_reserved: Sequence[OwnedReserved] = ()
    markets: tuple[Market, ...] | None = None  # force e.g. (ON_DEMAND,) under a deadline
    top: int = 20
    minimize: Literal["cost", "time"] = "cost"  # time: the fastest within the limits
    # The clouds this installation can launch on ([clouds] enabled; at a SkyPilot submit,
    # also what SkyPilot has enabled), narrowing the job's own resources.clouds. None: all.
    clouds: frozenset[str] | None = None
    # Within a cloud, the regions the executor can launch in (SkyPilot drops the AWS
    # regions missing from the account's zone mapping, e.g. opt-in regions not enabled);
    # a cloud not named here: any region.
    regions_by_cloud: Mapping[str, frozenset[str]] | None = None
    # measured records (finished attempts, imports): estimates use them where they apply
    calibration: Calibration | None = None
    # Leave out spot that cannot absorb one preemption before the deadline. Off for jobs
    # whose spot / on-demand choice the deadline spot policy makes (policies.next_attempt):
    # its exact safety net (policies.spot.slack) decides when spot is still safe.
    spot_slack_check: bool = True
    # Deadlines are checked at the p90 of the runtime estimate's held-out error
    # (jobs/estimate/runtime.hours_interval); off where runs take their estimate exactly.
    pessimistic_deadline: bool = True
    # The most nodes one placement may span; None: the job's resources.max_nodes.
    max_nodes: int | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    offer: Offer
    fit: Fit
    runtime: RuntimeEstimate
    est_hours: float  # uninterrupted hours for the remaining work
    expected_hours: float  # with expected preemption losses
    expected_cost: Decimal
    expected_preemptions: float
    hazard_source: str  # "cloud advisor" | "observed" | "default" | "" (not spot)
    reason: str = ""
    nodes: int = 1  # instances of ``offer`` held together (one cluster)
    fabric: Fabric | None = None  # what joins them (nodes > 1)
    # where the offer runs when its region does not say: a "global" offer the job did not
    # pin ('any of 48 RunPod data centres', policies/plan/places.py); '' otherwise
    where: str = ""

    @property
    def price_per_hour(self) -> Decimal:
        """Of all the nodes together."""
        return self.offer.price_per_hour * self.nodes

    @property
    def shape(self) -> str:
        """'H100 x8', or '2 nodes of H100 x8'."""
        one = f"{self.offer.gpu} x{self.offer.gpu_count}"
        return one if self.nodes == 1 else f"{self.nodes} nodes of {one}"

    @property
    def cost_range(self) -> tuple[Decimal, Decimal]:
        """Expected cost at the p10 and p90 of the runtime estimate's held-out error."""
        lo, hi = hours_interval(self.runtime.kind)
        return (self.expected_cost * Decimal(repr(lo))).quantize(CENT), (
            self.expected_cost * Decimal(repr(hi))).quantize(CENT)

    @property
    def risk_level(self) -> str:
        """none (not spot) | low | medium | high, by the expected preemptions."""
        if self.offer.market is not Market.SPOT:
            return "none"
        n = self.expected_preemptions
        return "low" if n < 0.5 else "medium" if n < 2 else "high"

    @property
    def risk(self) -> str:
        """'medium (1.0 expected preemptions)'; 'none' when not spot."""
        if self.offer.market is not Market.SPOT:
            return "none"
        return f"{self.risk_level} ({self.expected_preemptions:.1f} expected preemptions)"

    def to_json(self) -> dict[str, object]:
        o = self.offer
        return {
            "gpu": o.gpu,
            "count": o.gpu_count,
            "cloud": o.cloud,
            "region": o.region,
            "zone": o.zone,
            "instance_type": o.instance_type,
            "market": o.market.value,
            "nodes": self.nodes,
            "fabric": self.fabric.label if self.fabric is not None else None,
            "price_per_hour": float(o.price_per_hour),
            "price_per_hour_all_nodes": float(self.price_per_hour),
            "est_hours": round(self.est_hours, 4),
            "expected_hours": round(self.expected_hours, 4),
            "expected_cost": float(self.expected_cost),
            "expected_cost_p10": float(self.cost_range[0]),
            "expected_cost_p90": float(self.cost_range[1]),
            "expected_preemptions": round(self.expected_preemptions, 3),
            "risk": self.risk,
            "risk_source": self.hazard_source,
            "per_gpu_gib": round(self.fit.per_gpu_gib, 2),
            "layout": self.runtime.layout,
            "effective_concurrency": self.fit.concurrency,
            "tokens_per_second": round(self.runtime.tokens_per_second, 1),
            "runtime_source": self.runtime.source,
            "memory_source": self.fit.memory_source,
            "fits": self.fit.fits,
            "source": o.source,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Exclusion:
    gpu: str
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    candidates: tuple[Candidate, ...]
    excluded: tuple[Exclusion, ...]
    nearest_miss: str | None = None  # when nothing fits anywhere: what to change
    # The cost/time Pareto set of every placement within the limits, cheapest first:
    # each row is faster than every cheaper one.
    frontier: tuple[Candidate, ...] = ()
    # The best placement in each market searched (reserved capacity counts as on-demand):
    # what ``plan_job`` with ``markets=(m,)`` would pick, without planning again.
    best_by_market: Mapping[Market, Candidate] = field(default_factory=dict)

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def best_in(self, market: Market) -> Candidate | None:
        return self.best_by_market.get(market)

