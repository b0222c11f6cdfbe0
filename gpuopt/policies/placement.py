"""Rank placements by the expected cost of finishing the job, not by price per hour.

For every allowed GPU model the smallest GPU count that fits (and, under a deadline,
finishes in time on-demand) is taken; every offer of that configuration in the allowed
clouds, regions and markets becomes a candidate costed as

    on-demand / owned reserved:  est_hours x price
    spot:  (est_hours + E[preemptions] x (restart overhead + work lost since the last
            checkpoint)) x price, with E[preemptions] = hazard x est_hours

and candidates over the budget or the hourly cap, or unable to absorb one preemption
before the deadline (spot), are left out with the reason.

With ``resources.max_nodes`` > 1, a count sold on an instance type with an inter-node
fabric (providers/fabrics.py) is also tried on 2..max_nodes such instances: the runtime
counts the fabric in its communication term, the price is N x the instance's, and any
node's preemption is the job's (hazard N x one node's). Pure: the caller hands in
the offers, the time and what was observed; nothing here reads a clock or a database.

The planner is the package policies/plan/, one step per module; this module is its
public face (the names callers import from here). The reconcile loop's decision for a
submitted job's next attempt builds on ``plan_job`` (policies.next_attempt).
"""

from __future__ import annotations

from gpuopt.policies.plan.costing import (
    lost_hours_per_preemption as _lost_hours_per_preemption,
)
from gpuopt.policies.plan.model import (
    BUYABLE,
    CENT,
    Candidate,
    Exclusion,
    OwnedReserved,
    PlacementContext,
    Plan,
)
from gpuopt.policies.plan.nearest_miss import nearest_miss
from gpuopt.policies.plan.objective import LeastCost, LeastTime, Objective
from gpuopt.policies.plan.offers import host_acceptable, offer_filter
from gpuopt.policies.plan.planner import plan_job, require_work_inputs
from gpuopt.policies.plan.reasons import budget_miss, fastest_reason, top_reason
from gpuopt.policies.plan.reasons import costs_vs as _costs_vs
from gpuopt.policies.plan.reasons import ratio as _ratio

__all__ = [
    "BUYABLE",
    "CENT",
    "Candidate",
    "Exclusion",
    "LeastCost",
    "LeastTime",
    "Objective",
    "OwnedReserved",
    "PlacementContext",
    "Plan",
    "_costs_vs",
    "_lost_hours_per_preemption",
    "_ratio",
    "budget_miss",
    "fastest_reason",
    "host_acceptable",
    "nearest_miss",
    "offer_filter",
    "plan_job",
    "require_work_inputs",
    "top_reason",
]
