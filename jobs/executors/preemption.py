"""When the local executor should simulate a spot preemption of an attempt.

A schedule answers "kill this attempt how many seconds after it started?" (or None).
The executor, not the user program, carries the kill out (SIGKILL to the process group).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from gpuopt.jobs.executors.base import AttemptSpec


class PreemptionSchedule(Protocol):
    def kill_after(self, spec: AttemptSpec, launched_at: datetime) -> float | None:
        """Seconds after ``launched_at`` at which to preempt the attempt, or None."""
        ...


@dataclass(frozen=True, slots=True)
class PreemptAtTimes:
    """The n-th attempt of a job is preempted ``times[n-1]`` seconds after its start;
    attempts past the end of the list run undisturbed."""

    times: tuple[float, ...]

    def __post_init__(self) -> None:
        if any(t < 0 for t in self.times):
            raise ValueError("preemption times must be >= 0 seconds")

    def kill_after(self, spec: AttemptSpec, launched_at: datetime) -> float | None:
        del launched_at
        return self.times[spec.attempt - 1] if spec.attempt <= len(self.times) else None


@dataclass(frozen=True, slots=True)
class PreemptFromSpotTrace:
    """Replays a spot availability trace (``0`` = available, ``1`` = not; one sample per
    ``gap_seconds``) whose tick 0 is at ``epoch``. An attempt is preempted at the first
    tick after its launch where the trace turns from 0 to 1. ``time_scale`` shrinks the
    trace's clock for demos and tests (0.001: a 600 s tick lasts 0.6 s)."""

    samples: tuple[int, ...]
    gap_seconds: float
    epoch: datetime
    time_scale: float = 1.0

    @classmethod
    def from_file(
        cls, path: Path, epoch: datetime, time_scale: float = 1.0
    ) -> PreemptFromSpotTrace:
        """Reads the ``{"metadata": {"gap_seconds": g}, "data": [0, 1, ...]}`` trace format."""
        doc = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            samples=tuple(int(v) for v in doc["data"]),
            gap_seconds=float(doc["metadata"]["gap_seconds"]),
            epoch=epoch,
            time_scale=time_scale,
        )

    def kill_after(self, spec: AttemptSpec, launched_at: datetime) -> float | None:
        del spec
        tick = self.gap_seconds * self.time_scale
        elapsed = (launched_at - self.epoch).total_seconds()
        first = max(0, int(elapsed // tick) + 1)
        for i in range(first, len(self.samples)):
            if self.samples[i] == 1 and self.samples[i - 1] == 0:
                return max(0.0, i * tick - elapsed)
        return None


def seeded_times(seed: int, count: int, low: float, high: float) -> tuple[float, ...]:
    """``count`` reproducible random preemption times in [low, high) seconds."""
    import random

    rng = random.Random(seed)
    return tuple(rng.uniform(low, high) for _ in range(count))


def as_times(values: Sequence[float]) -> PreemptAtTimes:
    return PreemptAtTimes(tuple(float(v) for v in values))
