"""What the planner minimizes. An objective orders placements by a key of their expected
cost and hours, ranks the finished candidates and says why the top one wins.

The search prunes with the objective's key of a lower bound on cost and hours, so a key
must not decrease when either grows (any lexicographic order of the two does). Another
objective (say, cost with a price on time) is one more class with these four members,
handed to ``plan_job(..., objective=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Protocol

from gpuopt.policies.plan.model import Candidate
from gpuopt.policies.plan.reasons import (
    costlier_than_top,
    fastest_reason,
    slower_than_top,
    top_reason,
)


class Objective(Protocol):
    def key(self, cost: float, hours: float) -> tuple[float, float]:
        """Smaller is better; nondecreasing in both arguments."""
        ...

    def rank_key(self, c: Candidate) -> tuple[object, ...]:
        """The order of the ranked list (ties broken to a total order)."""
        ...

    def top_reason(self, top: Candidate, others: Sequence[Candidate]) -> str:
        """Why the top pick wins (``others``: the best of each other GPU model)."""
        ...

    def versus_top(self, c: Candidate, top: Candidate) -> str:
        """How far a lower row is from the top pick."""
        ...


def _tail(c: Candidate) -> tuple[object, ...]:
    return (c.price_per_hour, c.offer.key, c.nodes)


class LeastCost:
    """The cheapest expected cost; then the shorter run."""

    def key(self, cost: float, hours: float) -> tuple[float, float]:
        return (cost, hours)

    def rank_key(self, c: Candidate) -> tuple[object, ...]:
        return (c.expected_cost, c.est_hours, *_tail(c))

    def top_reason(self, top: Candidate, others: Sequence[Candidate]) -> str:
        return top_reason(top, others)

    def versus_top(self, c: Candidate, top: Candidate) -> str:
        return costlier_than_top(c, top)


class LeastTime:
    """The fewest expected hours within the limits; then the cheaper."""

    def key(self, cost: float, hours: float) -> tuple[float, float]:
        return (hours, cost)

    def rank_key(self, c: Candidate) -> tuple[object, ...]:
        return (c.expected_hours, c.expected_cost, *_tail(c))

    def top_reason(self, top: Candidate, others: Sequence[Candidate]) -> str:
        return fastest_reason(top)

    def versus_top(self, c: Candidate, top: Candidate) -> str:
        return slower_than_top(c, top)


OBJECTIVES: Mapping[str, Objective] = MappingProxyType(
    {"cost": LeastCost(), "time": LeastTime()})


def objective_named(name: str) -> Objective:
    """``PlacementContext.minimize``'s objective: "cost" or "time"."""
    return OBJECTIVES[name]
