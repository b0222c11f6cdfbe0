"""Dump many plans as JSON, to diff the planner's output before and after a change.

Run: .venv/bin/python benchmarks/plan_corpus.py OUT.json
The plans: every deploy/examples/*.yaml on the embedded price snapshot under several
budgets, deadlines, allowed clouds, objectives, markets and node limits; and 300 synthetic
jobs (benchmarks/plan_bench.py's) on 3,000 synthetic offers, one and four nodes,
calibrated or not. Everything a Plan holds is written (candidates, frontier, exclusions,
the nearest miss, the best of each market), so equal files mean equal plans.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from benchmarks.plan_bench import calibration_for, make_jobs, make_offers
from gpuopt.core.places import Place
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import OwnedReserved, PlacementContext, Plan, plan_job
from gpuopt.providers.offer import Market
from gpuopt.providers.snapshot import load_snapshot

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def plan_doc(plan: Plan) -> dict[str, object]:
    return {
        "candidates": [c.to_json() for c in plan.candidates],
        "frontier": [c.to_json() for c in plan.frontier],
        "excluded": [[e.gpu, e.reason] for e in plan.excluded],
        "nearest_miss": plan.nearest_miss,
        "best_by_market": {m.value: c.to_json() for m, c in plan.best_by_market.items()},
        "costs": [str(c.expected_cost) for c in plan.candidates],
    }


def example_plans(out: dict[str, object]) -> None:
    offers = load_snapshot().offers
    index = OfferIndex.build(offers)
    some = sorted({(o.cloud, o.region) for o in offers})
    owned = tuple(OwnedReserved(o.cloud, o.region, o.instance_type, 1)
                  for o in offers[::97] if o.market is Market.ON_DEMAND)
    avoid = frozenset(Place(c, r) for c, r in some[::5])
    for path in sorted(Path("deploy/examples").glob("*.yaml")):
        spec = parse_job_spec(path.read_text(encoding="utf-8"), path.name)
        for budget in (None, Decimal("1"), Decimal("50"), Decimal("500"), Decimal("100000")):
            for deadline in (None, 6, 24, 72, 400):
                for clouds in (None, frozenset({"aws"}), frozenset({"gcp", "azure", "lambda"})):
                    for minimize in ("cost", "time"):
                        deadline_at = NOW + timedelta(hours=deadline) if deadline else None
                        ctx = PlacementContext(now=NOW, deadline_at=deadline_at,
                                               budget_left=budget, clouds=clouds,
                                               minimize=minimize, top=10)  # type: ignore[arg-type]
                        key = f"{path.name}|b={budget}|d={deadline}|c={sorted(clouds or [])}" \
                              f"|{minimize}"
                        out[key] = plan_doc(plan_job(spec, index, ctx))
        base = PlacementContext(now=NOW, deadline_at=NOW + timedelta(hours=48), top=8)
        variants = {
            "nodes4": replace(base, max_nodes=4),
            "ondemand": replace(base, markets=(Market.ON_DEMAND,)),
            "spot": replace(base, markets=(Market.SPOT,)),
            "noslack": replace(base, spot_slack_check=False, pessimistic_deadline=False),
            "owned": replace(base, owned_reserved=owned),
            "avoid": replace(base, avoid=avoid),
            "half": replace(base, remaining_fraction=0.5),
            "observed": replace(base, observed_preemptions={
                Place(c, r): (i % 4, 10.0 + i) for i, (c, r) in enumerate(some[::3])}),
            "regions": replace(base, regions_by_cloud={"aws": frozenset(
                r for c, r in some if c == "aws" and r.startswith("us-"))}),
        }
        for name, ctx in variants.items():
            for minimize in ("cost", "time"):
                out[f"{path.name}|{name}|{minimize}"] = plan_doc(
                    plan_job(spec, index, replace(ctx, minimize=minimize)))  # type: ignore[arg-type]


def synthetic_plans(out: dict[str, object]) -> None:
    for nodes in (1, 4):
        rng = random.Random(7 + nodes)
        index = OfferIndex.build(make_offers(3_000, rng, NOW, fabrics=nodes > 1))
        for i, doc in enumerate(make_jobs(150, rng)):
            spec = parse_job_spec(doc, f"job-{i}.yaml")
            cal = calibration_for(spec) if i % 3 == 0 else None
            for minimize in ("cost", "time"):
                ctx = PlacementContext(now=NOW, deadline_at=spec.deadline_at(NOW), top=20,
                                       calibration=cal, max_nodes=nodes,  # type: ignore[arg-type]
                                       minimize=minimize)  # type: ignore[arg-type]
                out[f"synthetic|{nodes}|{i}|{minimize}"] = plan_doc(plan_job(spec, index, ctx))


def main() -> None:
    out: dict[str, object] = {}
    example_plans(out)
    synthetic_plans(out)
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(out)} plans written to {sys.argv[1]}")


if __name__ == "__main__":
    main()
