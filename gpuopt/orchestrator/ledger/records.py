"""Plain records the ledger hands to its readers (status, the weekly report, metrics).

These are the contract between the store (which writes attempts as they launch and
close) and everything that aggregates spend. Amounts are Decimal USD, exact; an
attempt's cost is its held hours x the price recorded when it launched, never re-priced.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gpuopt.core.money import held_cost
from gpuopt.jobs.states import EndReason, JobStatus


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    job_id: str
    job_name: str
    owner: str | None
    team: str | None
    attempt: int
    cloud: str
    region: str
    zone: str | None
    instance_type: str
    gpu: str
    gpu_count: int  # of all its nodes
    market: str  # providers.offer.Market value
    price_per_hour: Decimal  # in force at launch (of all its nodes)
    # On-demand price of the same instance type in the same place at launch, if known.
    on_demand_price_per_hour: Decimal | None
    started_at: datetime  # aware UTC
    ended_at: datetime | None  # None while running
    end_reason: EndReason | None  # None while running
    # Seconds of held time that did no lasting work: restart overhead (launch until the
    # job's first progress) plus work lost since the last checkpoint when preempted.
    wasted_seconds: float = 0.0
    # Run by the local executor: priced as if on its placement, never paid for.
    simulated: bool = False
    # What the GPU sampler measured (None: not measured): mean utilisation of the
    # attempt's GPUs, and the tokens it processed while sampled.
    utilization_pct: float | None = None
    tokens_processed: int | None = None

    def cost_between(self, start: datetime, end: datetime) -> Decimal:
        """Cost of the part of this attempt held within [start, end)."""
        lo = max(start, self.started_at)
        hi = min(end, self.ended_at or end)
        return held_cost(self.price_per_hour, lo, hi) if hi > lo else Decimal(0)


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    name: str
    owner: str | None
    team: str | None
    status: JobStatus
    submitted_at: datetime
    finished_at: datetime | None
    budget: Decimal | None
    simulated: bool = False  # run by the local executor (see AttemptRecord.simulated)
