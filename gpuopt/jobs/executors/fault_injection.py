"""Fault injection: when the local executor should simulate a spot preemption.

A schedule answers "kill this attempt how many seconds after it started?" (or None).
The executor, not the user program, carries the kill out (SIGKILL to the process group,
as a reclaimed spot VM takes every process with it); the attempt ends as preempted and
the job resumes from its checkpoint.

:class:`PreemptionDrills` is the user-facing one (``gpuopt submit --preempt-after``): one
small JSON file per job in a directory, written at submit, read at each launch, so the
daemon and ``submit --wait`` carry out the same drill.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from gpuopt.core.durations import duration_seconds
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


# At most this many preempted attempts in one drill, and each at most a day after start.
MAX_DRILL_PREEMPTIONS = 10
MAX_DRILL_SECONDS = 86400.0


def parse_preempt_after(text: str) -> tuple[float, ...]:
    """``"20s,45s"`` -> (20.0, 45.0): the n-th attempt is preempted that long after it
    starts. Raises ValueError naming the bad part."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise ValueError(f"{text!r}: write one duration per attempt, e.g. 20s or 20s,45s")
    if len(parts) > MAX_DRILL_PREEMPTIONS:
        raise ValueError(f"{text!r}: at most {MAX_DRILL_PREEMPTIONS} preemptions per drill")
    times = []
    for part in parts:
        seconds = duration_seconds(part)
        if seconds is None:
            raise ValueError(f"{part!r} is not a duration: write e.g. 20s, 1m or 1m30s")
        if not 0 < seconds <= MAX_DRILL_SECONDS:
            raise ValueError(f"{part!r}: must be more than 0 s and at most 24h")
        times.append(seconds)
    return tuple(times)


@dataclass(frozen=True, slots=True)
class PreemptionDrills:
    """Per-job drills: ``<directory>/<job id>.json`` = ``{"preempt_after": [20.0, 45.0]}``.
    A job without a file (or with an unreadable one) runs undisturbed."""

    directory: Path

    def path(self, job_id: str) -> Path:
        return self.directory / f"{job_id}.json"

    def save(self, job_id: str, times: Sequence[float]) -> Path:
        """Write the drill atomically (before the job is stored, so no launch misses it)."""
        PreemptAtTimes(tuple(times))  # validates
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(job_id)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"preempt_after": [float(t) for t in times]}),
                       encoding="utf-8")
        os.replace(tmp, path)
        return path

    def discard(self, job_id: str) -> None:
        self.path(job_id).unlink(missing_ok=True)

    def times(self, job_id: str) -> tuple[float, ...]:
        try:
            doc = json.loads(self.path(job_id).read_text(encoding="utf-8"))
            return tuple(float(t) for t in doc["preempt_after"])
        except (OSError, ValueError, KeyError, TypeError):
            return ()

    def kill_after(self, spec: AttemptSpec, launched_at: datetime) -> float | None:
        return PreemptAtTimes(self.times(spec.job_id)).kill_after(spec, launched_at)
