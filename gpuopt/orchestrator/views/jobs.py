"""Plain, JSON-ready views of stored jobs and attempts (for `gpuopt jobs/status/submit`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gpuopt.core.money import from_micros
from gpuopt.jobs.states import EndReason
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.orchestrator.store.ledger_repo import (
    attempt_cost_micros,
    job_cost_micros,
    job_on_demand_micros,
    on_demand_cost_micros,
)

SIMULATED = "simulated cost (local executor: priced as if on the planned placement)"


def usd(micros: int | None) -> str | None:
    value = from_micros(micros)
    return None if value is None else str(value)


def where(a: AttemptRow) -> str:
    place = "/".join(p for p in (a.cloud, a.zone or a.region) if p)
    nodes = f"{a.num_nodes} nodes of " if a.num_nodes > 1 else ""
    return f"{nodes}{a.gpu} x{a.gpu_count} {a.market} {place}"


def attempt_view(a: AttemptRow, now: datetime) -> dict[str, Any]:
    end = a.ended_at or now
    return {
        "attempt": a.number,
        "cluster_name": a.cluster_name,
        "status": a.status,
        "cloud": a.cloud, "region": a.region, "zone": a.zone,
        "instance_type": a.instance_type, "gpu": a.gpu, "gpu_count": a.gpu_count,
        "num_nodes": a.num_nodes,
        "market": a.market,
        "price_per_hour": usd(a.price_per_hour_micros),
        "on_demand_price_per_hour": usd(a.on_demand_price_per_hour_micros),
        "started_at": a.started_at.isoformat(),
        "ended_at": a.ended_at.isoformat() if a.ended_at else None,
        "duration_seconds": round((end - a.started_at).total_seconds(), 3),
        "cost": usd(attempt_cost_micros(a, now)),
        "on_demand_cost": usd(on_demand_cost_micros(a, now)),
        "end_reason": a.end_reason,
        "failure_kind": a.failure_kind,
        "exit_code": a.exit_code,
        "wasted_seconds": a.wasted_seconds,
        "progress": ({"step": a.progress_step, "total": a.progress_total}
                     if a.progress_step is not None else None),
        "detail": a.detail,
        "last_log_lines": a.last_log_lines.splitlines() if a.last_log_lines else [],
        "host": a.host,
        "stop_failures": a.stop_failures,
        "next_stop_at": a.next_stop_at.isoformat() if a.next_stop_at else None,
        "stop_error": a.stop_error,
    }


def progress_of(attempts: Sequence[AttemptRow]) -> tuple[int, int | None] | None:
    for a in reversed(attempts):
        if a.progress_step is not None:
            return a.progress_step, a.progress_total
    return None


def job_view(job: JobRow, attempts: Sequence[AttemptRow], now: datetime) -> dict[str, Any]:
    last = attempts[-1] if attempts else None
    progress = progress_of(attempts)
    return {
        "id": job.id,
        "name": job.name,
        "owner": job.owner,
        "team": job.team,
        "status": job.status,
        "executor": job.executor,
        "submitted_at": job.submitted_at.isoformat(),
        "deadline_at": job.deadline_at.isoformat() if job.deadline_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "budget": usd(job.budget_micros),
        "placement": where(last) if last else None,
        "attempts": len(attempts),
        "preemptions": sum(a.end_reason == EndReason.PREEMPTED for a in attempts),
        "cost": usd(job_cost_micros(attempts, now)),
        "on_demand_cost": usd(job_on_demand_micros(attempts, now)),
        "cost_is_simulated": job.executor == "local",
        "progress": {"step": progress[0], "total": progress[1]} if progress else None,
        "exit_code": job.exit_code,
        "last_error": job.last_error,
    }


def submitted_plan(job: JobRow) -> dict[str, Any] | None:
    """The plan chosen at submit (``plan_json``): where the offers came from and the
    ranked candidates, best first; None when the row holds none (a preview row)."""
    try:
        plan = json.loads(job.plan_json)
    except ValueError:
        return None
    if not isinstance(plan, dict) or not plan.get("candidates"):
        return None
    return {"offers_source": plan.get("offers_source"),
            "snapshot_as_of": plan.get("snapshot_as_of"),
            "candidates": list(plan["candidates"])}


def plan_line(plan: dict[str, Any]) -> str:
    """One line for the best candidate of a submitted plan."""
    best = plan["candidates"][0]
    where = "/".join(p for p in (best.get("cloud"), best.get("zone") or best.get("region"))
                     if p)
    source = plan.get("offers_source") or "?"
    if plan.get("snapshot_as_of"):
        source += f" as of {plan['snapshot_as_of']}"
    return (f"plan at submit: {best.get('count')}x{best.get('gpu')} {best.get('market')} "
            f"{where} at ${best.get('price_per_hour')}/h, est {best.get('est_hours')} h, "
            f"expected ${best.get('expected_cost')} ({len(plan['candidates'])} "
            f"candidate(s), offers from {source})")
