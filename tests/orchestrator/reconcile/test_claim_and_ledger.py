"""The claim's guards, and the report ledger's window semantics, on hand-made rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpuopt.core.money import held_cost
from gpuopt.core.places import Place
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

T0 = datetime(2025, 6, 2, 12, 0, tzinfo=UTC)


def _job(job_id: str, status: str = "queued", finished: datetime | None = None) -> JobRow:
    return JobRow(id=job_id, name=job_id, status=status, spec_yaml="", submitted_at=T0,
                  plan_json="{}", executor="skypilot", updated_at=T0, finished_at=finished)


def _attempt(job_id: str, n: int, start: datetime, end: datetime | None,
             price: int = 2_500_000, reason: str | None = "preempted") -> AttemptRow:
    return AttemptRow(job_id=job_id, number=n, cluster_name=f"gpuopt-{job_id}-{n}",
                      cloud="aws", region="us-east-1", zone="us-east-1a",
                      instance_type="p4d", gpu="A100", gpu_count=1, market="spot",
                      price_per_hour_micros=price, on_demand_price_per_hour_micros=4_000_000,
                      status="ended" if end else "running", created_at=start,
                      started_at=start, ended_at=end, end_reason=reason if end else None)


def test_claim_refuses_stale_status_and_taken_number(db_url: str) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import claim_attempt

    store = open_store(db_url)
    with store.transaction() as s:
        s.add(_job("a"))
    assert claim_attempt(store, "a", ("queued",), _attempt("a", 1, T0, None), T0, "go")
    # A second loop with the same (now stale) view of the job loses the claim.
    assert not claim_attempt(store, "a", ("queued",), _attempt("a", 1, T0, None), T0, "go")
    # Even when the status matches again, the attempt number already taken is refused.
    with store.transaction() as s:
        s.get(JobRow, "a").status = "preempted"  # type: ignore[union-attr]
    assert not claim_attempt(store, "a", ("preempted",), _attempt("a", 1, T0, None), T0, "x")
    with store.session() as s:
        assert s.get(JobRow, "a").status == "preempted"  # type: ignore[union-attr]
    assert claim_attempt(store, "a", ("preempted",), _attempt("a", 2, T0, None), T0, "y")
    store.close()


def test_report_ledger_window_and_exact_costs(db_url: str) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.ledger_repo import load_report_ledger, observed_preemptions

    h = timedelta(hours=1)
    store = open_store(db_url)
    with store.transaction() as s:
        s.add_all([_job("old", "succeeded", T0 - 30 * h), _job("spans"),
                   _job("fin", "failed", T0 + 2 * h)])
        s.flush()
        s.add_all([
            _attempt("old", 1, T0 - 40 * h, T0 - 30 * h),            # before the window
            _attempt("spans", 1, T0 - 10 * h, T0 - 5 * h),           # before, same job
            _attempt("spans", 2, T0 - 1 * h, T0 + 1 * h),            # overlaps the start
            _attempt("spans", 3, T0 + 30 * h, None, reason=None),    # after the window
        ])
    start, end = T0, T0 + 24 * h
    with store.session() as s:
        attempts, jobs = load_report_ledger(s, start, end)
        observed = observed_preemptions(s, T0)
    assert sorted((a.job_id, a.attempt) for a in attempts) == [("spans", 1), ("spans", 2)]
    assert sorted(j.job_id for j in jobs) == ["fin", "spans"]
    second = next(a for a in attempts if a.attempt == 2)
    assert second.price_per_hour == Decimal("2.5")
    assert second.cost_between(start, end) == Decimal("2.5")  # 1 h of the 2 in the window
    assert second.on_demand_price_per_hour == Decimal("4")  # the 1 h in the window: $4
    assert second.ended_at is not None
    assert held_cost(second.on_demand_price_per_hour, start, second.ended_at) == Decimal("4")
    # Spot in us-east-1: 3 attempts preempted in 10 + 5 + 2 held hours (the running one
    # starts after "now" and adds nothing).
    count, hours = observed[Place("aws", "us-east-1")]
    assert count == 3 and hours == 10 + 5 + 2
    store.close()
