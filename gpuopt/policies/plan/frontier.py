"""The cost/time Pareto set of the placements seen so far."""

from __future__ import annotations

from typing import Generic, TypeVar

Kept = TypeVar("Kept")


class Frontier(Generic[Kept]):
    """The Pareto set of (expected cost, expected hours) seen so far: each point is
    cheaper or faster than every other; ``Kept`` is what the caller keeps with a point."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float, Kept]] = []

    def dominated(self, cost: float, hours: float) -> bool:
        """Is some point at least as cheap and at least as fast?"""
        return any(c <= cost and h <= hours for c, h, _ in self.points)

    def add(self, cost: float, hours: float, kept: Kept) -> None:
        """Add the point unless dominated; drop the points it dominates."""
        if self.dominated(cost, hours):
            return
        self.points = [p for p in self.points if not (cost <= p[0] and hours <= p[1])]
        self.points.append((cost, hours, kept))

    def cheapest_first(self) -> tuple[Kept, ...]:
        return tuple(k for *_, k in sorted(self.points, key=lambda p: (p[0], p[1])))
