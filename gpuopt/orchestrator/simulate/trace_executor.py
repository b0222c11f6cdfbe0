"""An executor double that answers from spot-availability traces on a virtual clock
(`gpuopt simulate --engine daemon`: the real reconcile step against the replay's model).

The model is exactly the replay's (policies/spot/replay.py), seen from an executor. At
virtual time ``start + t x gap`` (tick t; the clock is the engine's, read at each call):

- a launch of spot in zone i fails for capacity (``LaunchError``, ``FailureKind.CAPACITY``,
  AWS's own text) when ``trace_i[t]`` is 1 or past the trace's end: nothing ran, nothing
  is billed, no work is done. Otherwise it runs; on-demand always runs;
- a running attempt does no work for the first ``restart_overhead_s`` seconds it is
  held, then works: per held tick ``spent = min(gap, overhead_left)``, ``work += gap -
  spent``, the same float operations in the same order as the replay, so the work done
  is bit-identical. Work is the job's, kept across attempts (perfect checkpoints);
- ``adopt`` at tick t: a spot attempt whose zone's trace says unavailable at t (after
  its launch tick) was preempted at ``start + t x gap``; an attempt whose work reached
  the task succeeded (``ended_at`` None: held until the reconcile step notices, which
  is the replay's billing of whole ticks; the exact finish moment is kept for
  :meth:`TraceExecutor.finish_s`); otherwise it runs, reporting its progress as
  microseconds of work done out of the task's;
- ``stop`` ends it (idempotent);
- a probe (make before break, ``provision`` then ``start``: the replay's
  ``launch-probe``, policies/spot/probe.py): ``provision`` of spot at tick t fails for
  capacity as a launch does, else the instance is up ``min(probe_s, gap)`` into the
  tick and runs nothing; a stop of the job's held attempt in that tick lets it work
  until then (``probe_tick``: the same float operations as the replay), ending it at
  that moment (succeeded, when its work reaches the task first); ``start`` runs the
  job there, its work starting ``max(restart_overhead_s, overlap)`` into the tick.

The kind is ``trace``, not the local executor's: the reconcile step records the spot
availability its attempts observe (orchestrator/reconcile/observing.py), as it does for a cloud.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    AttemptStatus,
    FailureKind,
    LaunchError,
    LaunchResult,
    Progress,
    Provisioned,
)
from gpuopt.policies.spot.probe import DEFAULT_PROBE_S, ProbeTick, probe_tick

TRACE_EXECUTOR = "trace"
_MICROS = 1_000_000


def capacity_error_text(instance_type: str, zone: str) -> str:
    """What AWS answers a spot RunInstances in a pool without capacity (botocore's
    ClientError text, as SkyPilot passes it on)."""
    return ("An error occurred (InsufficientInstanceCapacity) when calling the RunInstances "
            "operation (reached max retries: 0): There is no Spot capacity available that "
            f"matches your request. (instance type {instance_type}, zone {zone})")


@dataclass
class VirtualClock:
    """The simulated time; the engine moves it, the double reads it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class _Attempt:
    name: str
    job_id: str
    zone: int | None  # trace index of a spot attempt; None: on-demand
    launched: int  # tick of its launch
    overhead_left: float
    accounted: int  # the first tick whose work is not counted yet
    state: AttemptState = AttemptState.RUNNING
    ended_at: datetime | None = None


@dataclass
class _Probe:
    """An instance provisioned at tick ``at`` for a job, running nothing yet."""

    job_id: str
    zone: int | None
    at: int
    overlap_s: float


class TraceExecutor:
    """The Executor protocol (jobs/executors/base.py) over traces, one per zone.

    ``zones[i]`` is the zone name of ``traces[i]``; ``start`` is virtual tick 0 and
    ``start_tick`` the trace index it stands for; ``clock`` says the virtual time now
    (always a tick's start)."""

    kind = TRACE_EXECUTOR

    def __init__(self, *, traces: Sequence[Sequence[int]], zones: Sequence[str], gap_s: float,
                 start: datetime, restart_overhead_s: float, task_s: float,
                 clock: Callable[[], datetime], start_tick: int = 0,
                 probe_s: float = DEFAULT_PROBE_S) -> None:
        if len(zones) != len(traces):
            raise ValueError("one zone name per trace is needed")
        if gap_s <= 0 or task_s <= 0 or restart_overhead_s < 0:
            raise ValueError("gap and task must be > 0, restart overhead >= 0")
        self.traces = tuple(tuple(t) for t in traces)
        self.zones = tuple(zones)
        self.gap_s = gap_s
        self.epoch = start  # virtual tick 0
        self.restart_overhead_s = restart_overhead_s
        self.task_s = task_s
        self.clock = clock
        self.start_tick = start_tick
        self.probe_s = probe_s
        self._attempts: dict[str, _Attempt] = {}
        self._probes: dict[str, _Probe] = {}  # provisioned, not started
        # starts made while another attempt of the job ran (the engine fails on any)
        self.overlaps: list[str] = []
        self._work: dict[str, float] = {}  # job id -> seconds of work done
        self._finish: dict[str, float] = {}  # job id -> seconds after start it finished

    # -- the virtual clock ------------------------------------------------------------
    def tick(self) -> int:
        """The tick the clock is at (it must be at a tick's start)."""
        elapsed = (self.clock() - self.epoch) / timedelta(seconds=1)
        t = round(elapsed / self.gap_s)
        if t < 0 or abs(t * self.gap_s - elapsed) > 1e-3:
            raise ValueError(f"the clock ({elapsed:g} s after the start) is not at a tick "
                             f"of {self.gap_s:g} s")
        return t

    def at(self, t: int) -> datetime:
        return self.epoch + timedelta(seconds=t * self.gap_s)

    def available(self, zone: int, t: int) -> bool:
        """Can spot be had in ``zone`` during tick t (past the trace's end: no)."""
        i = self.start_tick + t
        trace = self.traces[zone]
        return 0 <= i < len(trace) and trace[i] == 0

    # -- what the engine reads --------------------------------------------------------
    def finish_s(self, job_id: str) -> float | None:
        """When the job's work reached the task, seconds after the start (None: not yet)."""
        return self._finish.get(job_id)

    # -- the Executor protocol --------------------------------------------------------
    def launch(self, spec: AttemptSpec) -> LaunchResult:
        name = spec.cluster_name
        if name in self._attempts:
            return LaunchResult(name, adopted=True)
        t = self.tick()
        zone = self._zone_for(spec, t)
        self._attempts[name] = _Attempt(name, spec.job_id, zone, t, self.restart_overhead_s, t)
        self._work.setdefault(spec.job_id, 0.0)
        return LaunchResult(name, adopted=False)

    def _zone_for(self, spec: AttemptSpec, t: int) -> int | None:
        """The trace index of a spot placement (None: on-demand); LaunchError when the
        zone has no spot at tick t."""
        p = spec.placement
        if not p.use_spot:
            return None
        if p.zone not in self.zones:
            raise LaunchError(f"zone {p.zone!r} has no trace (traced zones: "
                              f"{', '.join(self.zones)})", FailureKind.REFUSED)
        zone = self.zones.index(p.zone)
        if not self.available(zone, t):
            raise LaunchError(capacity_error_text(p.instance_type or "?", p.zone),
                              FailureKind.CAPACITY)
        return zone

    # -- probes (jobs.executors.base.Provisioner) --------------------------------------
    def provision(self, spec: AttemptSpec) -> Provisioned:
        name = spec.cluster_name
        probe = self._probes.get(name)
        if probe is None:
            if name in self._attempts:
                raise LaunchError(f"{name} was started already", FailureKind.REFUSED)
            t = self.tick()
            zone = self._zone_for(spec, t)
            probe = _Probe(spec.job_id, zone, t, min(self.probe_s, self.gap_s))
            self._probes[name] = probe
            self._work.setdefault(spec.job_id, 0.0)
        return Provisioned(name, self.at(probe.at) + timedelta(seconds=probe.overlap_s))

    def start(self, spec: AttemptSpec) -> LaunchResult:
        name = spec.cluster_name
        if name in self._attempts:
            return LaunchResult(name, adopted=True)
        probe = self._probes.pop(name, None)
        if probe is None:
            raise LaunchError(f"{name} was never provisioned", FailureKind.REFUSED)
        self.overlaps.extend(  # never: the job would run twice at once
            f"{name} started while {other.name} ran the job"
            for other in self._attempts.values()
            if other.job_id == probe.job_id and other.state is AttemptState.RUNNING)
        overhead = max(self.restart_overhead_s, probe.overlap_s)
        self._attempts[name] = _Attempt(name, probe.job_id, probe.zone, probe.at, overhead,
                                        probe.at)
        return LaunchResult(name, adopted=False)

    def poll(self, cluster_name: str) -> AttemptStatus:
        a = self._attempts.get(cluster_name)
        if a is None:
            probe = self._probes.get(cluster_name)
            if probe is not None:
                return AttemptStatus(cluster_name, AttemptState.PROVISIONED,
                                     started_at=self.at(probe.at), detail="provisioned")
            return AttemptStatus(cluster_name, AttemptState.UNKNOWN, detail="no such attempt")
        self._advance(a, self.tick())
        return self._status(a)

    def adopt(self, cluster_name: str) -> AttemptStatus:
        return self.poll(cluster_name)

    def stop(self, cluster_name: str) -> AttemptStatus:
        a = self._attempts.get(cluster_name)
        if a is None:  # never launched (e.g. its launch failed): nothing to stop
            self._probes.pop(cluster_name, None)  # a probe torn down
            return AttemptStatus(cluster_name, AttemptState.CANCELLED, detail="nothing ran")
        t = self.tick()
        self._advance(a, t)
        if a.state is AttemptState.RUNNING:
            probe = next((p for p in self._probes.values()
                          if p.job_id == a.job_id and p.at == t), None)
            if probe is not None:  # it works on until the probe's instance is up
                self._overlap(a, t, probe_tick(self.gap_s, self.probe_s,
                                               self.restart_overhead_s, a.overhead_left))
            else:
                a.state, a.ended_at = AttemptState.CANCELLED, self.at(t)
        return self._status(a)

    def _overlap(self, a: _Attempt, t: int, p: ProbeTick) -> None:
        """The held attempt's part of a probe's tick t (the replay's ``_probe``)."""
        work = self._work[a.job_id]
        if work + p.old_gain_s >= self.task_s:  # done before the switch
            into = p.old_spent_s + (self.task_s - work)
            self._finish[a.job_id] = t * self.gap_s + into
            self._work[a.job_id] = self.task_s
            a.state, a.ended_at = AttemptState.SUCCEEDED, self.at(t) + timedelta(seconds=into)
            return
        self._work[a.job_id] = work + p.old_gain_s
        a.overhead_left -= p.old_spent_s
        a.state = AttemptState.CANCELLED
        a.ended_at = self.at(t) + timedelta(seconds=p.overlap_s)

    def logs(self, cluster_name: str, follow: bool = False) -> Iterator[str]:
        return iter(())

    def list_running(self) -> list[str]:
        return [n for n, a in self._attempts.items() if a.state is AttemptState.RUNNING]

    # -- the model --------------------------------------------------------------------
    def _advance(self, a: _Attempt, t: int) -> None:
        """Count the work of the held ticks before t, in order; a spot attempt whose zone
        has no spot at a tick after its launch is preempted there."""
        k = a.accounted
        while a.state is AttemptState.RUNNING:
            if a.zone is not None and k > a.launched and not self.available(a.zone, k):
                a.state, a.ended_at = AttemptState.PREEMPTED, self.at(k)
                break
            if k >= t:
                break
            self._work_tick(a, k)
            k += 1
        a.accounted = max(a.accounted, min(k, t))

    def _work_tick(self, a: _Attempt, k: int) -> None:
        gap = self.gap_s
        spent = min(gap, a.overhead_left)
        a.overhead_left -= spent
        gain = gap - spent
        work = self._work[a.job_id]
        if work + gain >= self.task_s:
            self._finish[a.job_id] = k * gap + spent + (self.task_s - work)
            self._work[a.job_id] = self.task_s
            a.state = AttemptState.SUCCEEDED
            return
        self._work[a.job_id] = work + gain

    def _status(self, a: _Attempt) -> AttemptStatus:
        work = self._work.get(a.job_id, 0.0)
        progress = Progress(round(work * _MICROS), round(self.task_s * _MICROS))
        return AttemptStatus(
            a.name, a.state, exit_code=0 if a.state is AttemptState.SUCCEEDED else None,
            progress=progress, started_at=self.at(a.launched), ended_at=a.ended_at,
            detail=self._detail(a),
        )

    def _detail(self, a: _Attempt) -> str:
        if a.state is AttemptState.PREEMPTED and a.zone is not None:
            return f"spot capacity reclaimed in {self.zones[a.zone]} (trace)"
        if a.state is AttemptState.CANCELLED:
            return "stopped"
        return ""
