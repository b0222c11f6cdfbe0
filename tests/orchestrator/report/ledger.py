"""A hand-built ledger for week 2026-W48 (Mon 23 Nov - Sun 29 Nov 2026) and the week before.

The expected figures in the tests are worked out by hand from these records (see the
comments): prices are round so that held hours x price is easy to check.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord

D = Decimal


def t(day: int, hour: int, minute: int = 0, month: int = 11) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


AS_OF = t(30, 12)  # the ledger is read on Monday 30 Nov, 12:00 UTC


def attempt(**kw: object) -> AttemptRecord:
    base: dict[str, object] = {
        "zone": None,
        "attempt": 1,
        "on_demand_price_per_hour": None,
        "end_reason": None,
        "ended_at": None,
        "wasted_seconds": 0.0,
    }
    base.update(kw)
    return AttemptRecord(**base)  # type: ignore[arg-type]


def job(job_id: str, name: str, owner: str, team: str, status: str,
        finished_at: datetime | None, budget: Decimal | None) -> JobRecord:
    return JobRecord(job_id, name, owner, team, status, t(16, 0), finished_at, budget)


def ledger() -> tuple[list[AttemptRecord], list[JobRecord]]:
    attempts = [
        # j1 attempt 1: AWS spot 8x A100 at $12/h (on-demand $32/h), Sun 22 22:00 -> Mon 23
        # 04:00, preempted, 30 min wasted. W47: 2 h = $24 (od $64); W48: 4 h = $48 (od $128).
        attempt(job_id="j1", job_name="llama-ft", owner="alice", team="nlp", attempt=1,
                cloud="aws", region="us-east-1", zone="us-east-1a",
                instance_type="p4d.24xlarge", gpu="A100-40GB", gpu_count=8, market="spot",
                price_per_hour=D("12.00"), on_demand_price_per_hour=D("32.00"),
                started_at=t(22, 22), ended_at=t(23, 4), end_reason="preempted",
                wasted_seconds=1800.0),
        # j1 attempt 2: GCP on-demand 8x A100 at $30/h, Mon 23 04:30 -> Tue 24 02:30
        # (22 h = $660: Mon 19.5 h = $585, Tue 2.5 h = $75), succeeded.
        attempt(job_id="j1", job_name="llama-ft", owner="alice", team="nlp", attempt=2,
                cloud="gcp", region="us-central1", instance_type="a2-highgpu-8g",
                gpu="A100-40GB", gpu_count=8, market="on-demand", price_per_hour=D("30.00"),
                started_at=t(23, 4, 30), ended_at=t(24, 2, 30), end_reason="succeeded"),
        # j2: Azure spot 1x H100 at $2.50/h (od $7/h), Wed 25 10:00 -> 14:00, failed:
        # 4 h = $10 (od $28).
        attempt(job_id="j2", job_name="embed-batch", owner="bob", team="nlp",
                cloud="azure", region="eastus", instance_type="Standard_NC40ads_H100_v5",
                gpu="H100", gpu_count=1, market="spot", price_per_hour=D("2.50"),
                on_demand_price_per_hour=D("7.00"), started_at=t(25, 10),
                ended_at=t(25, 14), end_reason="failed"),
        # j3: AWS spot 4x A10G at $2/h (od $5.60/h) from Sat 28 20:00, still running: in W48
        # (UTC) 28 h = $56 (od $156.80): Sat 4 h = $8, Sun 24 h = $48.
        attempt(job_id="j3", job_name="mistral-ft", owner="carol", team="vision",
                cloud="aws", region="us-west-2", instance_type="g5.12xlarge", gpu="A10G",
                gpu_count=4, market="spot", price_per_hour=D("2.00"),
                on_demand_price_per_hour=D("5.60"), started_at=t(28, 20)),
        # j5: Azure on-demand 1 GPU at $3.333333/h, Thu 26 23:00 -> Fri 27 01:00:
        # 2 h = $6.666666 (Thu $3.333333, Fri $3.333333), succeeded.
        attempt(job_id="j5", job_name="eval", owner="dave", team="vision", cloud="azure",
                region="westeurope", instance_type="Standard_NC24ads_A100_v4",
                gpu="A100-80GB", gpu_count=1, market="on-demand",
                price_per_hour=D("3.333333"), started_at=t(26, 23), ended_at=t(27, 1),
                end_reason="succeeded"),
        # j4 (W47 only): GCP spot 1 GPU at $1/h (od $3/h), Wed 18 00:00 -> 06:00 = $6 (od $18),
        # preempted with 600 s wasted.
        attempt(job_id="j4", job_name="old-job", owner="alice", team="nlp", cloud="gcp",
                region="us-central1", instance_type="g2-standard-4", gpu="L4", gpu_count=1,
                market="spot", price_per_hour=D("1.00"), on_demand_price_per_hour=D("3.00"),
                started_at=t(18, 0), ended_at=t(18, 6), end_reason="preempted",
                wasted_seconds=600.0),
    ]
    jobs = [
        job("j1", "llama-ft", "alice", "nlp", "succeeded", t(24, 2, 30), D("1000")),
        job("j2", "embed-batch", "bob", "nlp", "failed", t(25, 14), None),
        job("j3", "mistral-ft", "carol", "vision", "running", None, D("100")),
        job("j4", "old-job", "alice", "nlp", "succeeded", t(18, 6), None),
        job("j5", "eval", "dave", "vision", "succeeded", t(27, 1), None),
    ]
    return attempts, jobs


TEAM_BUDGETS = {"nlp": D("800"), "vision": D("50")}


def loader(start: datetime, end: datetime) -> tuple[list[AttemptRecord], list[JobRecord]]:
    """The store's contract, over the hand-built ledger."""
    attempts, jobs = ledger()
    overlapping = {
        a.job_id for a in attempts if a.started_at < end and (a.ended_at or end) > start
    }
    finished = {j.job_id for j in jobs if j.finished_at and start <= j.finished_at < end}
    ids = overlapping | finished
    return (
        [a for a in attempts if a.job_id in ids and a.started_at < end],
        [j for j in jobs if j.job_id in ids],
    )
