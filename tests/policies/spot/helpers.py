"""Small builders shared by the spot-policy tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from gpuopt.policies.spot.model import Hold, Observation
from gpuopt.policies.spot.replay import Scenario

SPOT = Decimal("1.2")  # USD/h -> 0.2 per 600 s tick
OD = Decimal("3.6")  # USD/h -> 0.6 per 600 s tick


def scenario(
    *traces: Sequence[int],
    gap: float = 600.0,
    task: float,
    deadline: float,
    overhead: float,
    start: int = 0,
) -> Scenario:
    return Scenario(
        traces=tuple(traces),
        gap_s=gap,
        task_s=task,
        deadline_s=deadline,
        restart_overhead_s=overhead,
        spot_prices=tuple(SPOT for _ in traces),
        on_demand_price=OD,
        start_tick=start,
    )


@dataclass
class Scripted:
    """Plays a fixed list of holds (the last one repeats) and records what it saw."""

    plan: list[Hold]
    name: str = "scripted"
    seen: list[Observation] = field(default_factory=list)

    def decide(self, obs: Observation) -> Hold:
        self.seen.append(obs)
        i = len(self.seen) - 1
        return self.plan[min(i, len(self.plan) - 1)]


def markov_trace(rng: random.Random, ticks: int, p_fail: float, p_recover: float) -> list[int]:
    """On/off availability: from available, lost with p_fail per tick; back with p_recover."""
    out, up = [], rng.random() < p_recover / (p_fail + p_recover)
    for _ in range(ticks):
        out.append(0 if up else 1)
        up = (rng.random() >= p_fail) if up else (rng.random() < p_recover)
    return out
