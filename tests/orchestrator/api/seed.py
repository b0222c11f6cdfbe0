"""A store with what the dashboard shows: jobs of two users with ended and running
attempts on SkyPilot (paid, so in the report) over this week and earlier ones, and a
price history of one GPU and market."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from gpuopt.jobs.states import AttemptPhase, EndReason, JobStatus

PRICES = (Decimal("1.20"), Decimal("0.95"), Decimal("1.10"))


def _job(session: Any, job_id: str, user: str, team: str, status: JobStatus,
         at: datetime) -> None:
    from gpuopt.orchestrator.store.jobs_repo import insert_job
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    plan = {"offers_source": "store", "snapshot_as_of": None, "candidates": [
        {"gpu": "A100-80GB", "count": 1, "cloud": "aws", "region": "us-east-1",
         "zone": "us-east-1a", "market": "spot", "price_per_hour": 1.2, "est_hours": 3.0,
         "expected_cost": 3.9}]}
    insert_job(session, JobRow(
        id=job_id, name=job_id.rsplit("-", 1)[0], owner=user, team=team, status=status,
        spec_yaml="name: x\n", plan_json=json.dumps(plan), executor="skypilot",
        submitted_at=at, updated_at=at, submitted_by=user,
        finished_at=at + timedelta(hours=3) if not status.is_live else None), "queued")


def _attempt(session: Any, job_id: str, n: int, start: datetime, hours: float | None,
             price: Decimal, end: EndReason | None) -> None:
    from gpuopt.core.money import to_micros
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

    ended = start + timedelta(hours=hours) if hours is not None else None
    micros = to_micros(price)
    session.add(AttemptRow(
        job_id=job_id, number=n, cluster_name=f"{job_id}-{n}", cloud="aws",
        region="us-east-1", zone="us-east-1a", instance_type="p4de.24xlarge",
        gpu="A100-80GB", gpu_count=1, market="spot", price_per_hour_micros=micros,
        on_demand_price_per_hour_micros=to_micros(Decimal("4.10")),
        status=AttemptPhase.ENDED if ended else AttemptPhase.RUNNING, created_at=start,
        started_at=start, ended_at=ended, end_reason=end,
        cost_micros=round(micros * hours) if hours is not None else None,
        progress_step=300 if ended is None else 1000, progress_total=1000,
        last_log_lines="step 299 loss 1.23\nstep 300 loss 1.21" if ended is None else
        "done: loss 0.98"))


def seed(store: Any, now: datetime) -> dict[str, str]:
    """Jobs: alice's finished one (this week), alice's running one, bob's finished one
    two weeks ago. Returns their ids by role."""
    ids = {"alice_done": "alice-train-aaaa01", "alice_live": "alice-infer-aaaa02",
           "bob_old": "bob-train-bbbb01"}
    start = now - timedelta(hours=6)
    old = now - timedelta(days=14)
    with store.transaction() as session:
        _job(session, ids["alice_done"], "alice", "nlp", JobStatus.SUCCEEDED, start)
        _job(session, ids["alice_live"], "alice", "nlp", JobStatus.RUNNING, start)
        _job(session, ids["bob_old"], "bob", "cv", JobStatus.SUCCEEDED, old)
        session.flush()
        _attempt(session, ids["alice_done"], 1, start, 1.0, PRICES[0], EndReason.PREEMPTED)
        _attempt(session, ids["alice_done"], 2, start + timedelta(hours=1), 2.0, PRICES[1],
                 EndReason.SUCCEEDED)
        _attempt(session, ids["alice_live"], 1, now - timedelta(hours=2), None, PRICES[2],
                 None)
        _attempt(session, ids["bob_old"], 1, old, 4.0, PRICES[1], EndReason.SUCCEEDED)
    _prices(store, now)
    return ids


def _prices(store: Any, now: datetime) -> None:
    from gpuopt.orchestrator.store.price_history import record_offers
    from gpuopt.providers.offer import Market, Offer

    for days, price in ((20, "1.30"), (12, "1.25"), (5, "1.28"), (1, "1.26")):
        at = now - timedelta(days=days)
        offers = [Offer(cloud="aws", region="us-east-1", zone=zone,
                        instance_type="p4de.24xlarge", gpu="A100-80GB", gpu_count=1,
                        gpu_memory_gib=80, vcpus=12, ram_gib=140, market=Market.SPOT,
                        price_per_hour=Decimal(price) + delta, observed_at=at,
                        source="api:aws")
                  for zone, delta in (("us-east-1a", Decimal(0)),
                                      ("us-east-1b", Decimal("0.05")))]
        with store.transaction() as session:
            record_offers(session, offers, now=at)
