"""The trace executor double (orchestrator/simulate/trace_executor.py), on hand-computed
traces: launches fail for capacity where the trace has no spot, work accrues after the
restart overhead tick by tick, a preemption ends at its tick, success is reported with
the exact finish moment, work survives attempts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    Executor,
    FailureKind,
    LaunchError,
    Placement,
)
from gpuopt.jobs.executors.capacity_errors import LaunchProblem, classify_texts
from gpuopt.orchestrator.simulate.trace_executor import TRACE_EXECUTOR, TraceExecutor, VirtualClock
from gpuopt.orchestrator.store.ledger_repo import SIMULATING_EXECUTOR

T0 = datetime(2026, 1, 5, tzinfo=UTC)
GAP = 600.0
ZONES = ("us-east-1a", "us-east-1b")


def _double(traces: tuple[tuple[int, ...], ...] = ((0, 0, 1, 0), (1, 0, 0, 0)),
            overhead: float = 360.0, task: float = 1500.0, start_tick: int = 0
            ) -> tuple[TraceExecutor, VirtualClock]:
    clock = VirtualClock(T0)
    ex = TraceExecutor(traces=traces, zones=ZONES[:len(traces)], gap_s=GAP, start=T0,
                       restart_overhead_s=overhead, task_s=task, clock=clock,
                       start_tick=start_tick)
    return ex, clock


def work_done(ex: TraceExecutor, job_id: str) -> float:
    """The seconds of work the executor has credited to the job so far."""
    return ex._work.get(job_id, 0.0)


def _spec(n: int, zone: str | None) -> AttemptSpec:
    placement = Placement(cloud="aws", region="us-east-1", zone=zone, instance_type="p3.2xlarge",
                          gpu="V100", gpu_count=1, use_spot=zone is not None)
    return AttemptSpec(job_id="sim-job", attempt=n, run="true", checkpoint_dir="s3://b/c",
                       placement=placement)


def _at(clock: VirtualClock, tick: int) -> None:
    clock.now = T0 + timedelta(seconds=tick * GAP)


def test_it_is_an_executor_whose_spot_attempts_are_observed() -> None:
    ex, _ = _double()
    assert isinstance(ex, Executor)
    assert ex.kind == TRACE_EXECUTOR != SIMULATING_EXECUTOR


def test_a_launch_without_spot_fails_for_capacity_in_aws_words_and_holds_nothing() -> None:
    ex, clock = _double()
    with pytest.raises(LaunchError) as err:
        ex.launch(_spec(1, "us-east-1b"))  # trace 1 is 1 at tick 0
    assert err.value.kind is FailureKind.CAPACITY
    assert classify_texts([str(err.value)]).problem is LaunchProblem.CAPACITY
    assert "InsufficientInstanceCapacity" in str(err.value)
    assert ex.list_running() == []
    assert ex.adopt(_spec(1, "us-east-1b").cluster_name).state is AttemptState.UNKNOWN
    assert work_done(ex, "sim-job") == 0.0
    # past the end of the trace: no spot either
    _at(clock, 4)
    with pytest.raises(LaunchError):
        ex.launch(_spec(2, "us-east-1a"))


def test_on_demand_always_launches_and_works_after_the_overhead() -> None:
    ex, clock = _double(traces=((1, 1, 1, 1),))
    name = _spec(1, None).cluster_name
    assert not ex.launch(_spec(1, None)).adopted
    assert ex.launch(_spec(1, None)).adopted  # the same name again: adopted
    _at(clock, 1)
    s = ex.adopt(name)
    assert s.state is AttemptState.RUNNING
    assert work_done(ex, "sim-job") == 600.0 - 360.0
    assert s.progress is not None and (s.progress.step, s.progress.total) == (240_000_000,
                                                                             1_500_000_000)
    assert s.started_at == T0
    _at(clock, 2)
    assert ex.adopt(name).state is AttemptState.RUNNING
    assert work_done(ex, "sim-job") == 840.0
    _at(clock, 3)  # tick 2 brings it to 1440 < 1500
    assert ex.adopt(name).state is AttemptState.RUNNING
    _at(clock, 4)  # during tick 3: 60 s in
    s = ex.adopt(name)
    assert s.state is AttemptState.SUCCEEDED and s.exit_code == 0
    assert s.ended_at is None  # held until the daemon notices: whole ticks billed
    assert ex.finish_s("sim-job") == 3 * 600.0 + 60.0


def test_a_preemption_ends_at_its_tick_and_the_work_survives() -> None:
    ex, clock = _double()
    a1 = _spec(1, "us-east-1a")
    ex.launch(a1)  # tick 0, zone 0 up at 0 and 1, down at 2
    _at(clock, 1)
    assert ex.adopt(a1.cluster_name).state is AttemptState.RUNNING
    _at(clock, 2)
    s = ex.adopt(a1.cluster_name)
    assert s.state is AttemptState.PREEMPTED
    assert s.ended_at == T0 + timedelta(seconds=1200)
    assert work_done(ex, "sim-job") == 240.0 + 600.0  # ticks 0 and 1 count
    assert ex.stop(a1.cluster_name).state is AttemptState.PREEMPTED  # idempotent
    a2 = _spec(2, "us-east-1b")
    ex.launch(a2)  # tick 2 in zone 1: up; a new restart overhead
    _at(clock, 3)
    assert ex.adopt(a2.cluster_name).state is AttemptState.RUNNING
    assert work_done(ex, "sim-job") == 840.0 + 240.0
    _at(clock, 4)  # tick 3: 1080 + 420 reaches 1500
    assert ex.adopt(a2.cluster_name).state is AttemptState.SUCCEEDED
    assert ex.finish_s("sim-job") == 3 * 600.0 + 0.0 + (1500.0 - 1080.0)


def test_stop_ends_a_running_attempt_at_the_current_tick() -> None:
    ex, clock = _double(traces=((0, 0, 0, 0),), task=10_000.0)
    a = _spec(1, "us-east-1a")
    ex.launch(a)
    _at(clock, 2)
    s = ex.stop(a.cluster_name)
    assert s.state is AttemptState.CANCELLED
    assert s.ended_at == T0 + timedelta(seconds=1200)
    assert work_done(ex, "sim-job") == 240.0 + 600.0
    _at(clock, 3)
    assert ex.stop(a.cluster_name).ended_at == s.ended_at  # idempotent, no more work
    assert work_done(ex, "sim-job") == 840.0
    assert ex.list_running() == []


def test_a_long_overhead_spans_ticks_and_the_start_offset_shifts_the_trace() -> None:
    ex, clock = _double(traces=((1, 1, 0, 0, 0),), overhead=900.0, task=1000.0, start_tick=2)
    a = _spec(1, "us-east-1a")
    ex.launch(a)  # trace index 2: up
    _at(clock, 1)
    ex.adopt(a.cluster_name)
    assert work_done(ex, "sim-job") == 0.0  # 600 of 900 s of overhead
    _at(clock, 2)
    ex.adopt(a.cluster_name)
    assert work_done(ex, "sim-job") == 300.0
    _at(clock, 3)  # index 5 is past the end: preempted, and tick 2's work still counts
    s = ex.adopt(a.cluster_name)
    assert s.state is AttemptState.PREEMPTED
    assert work_done(ex, "sim-job") == 900.0


def test_the_clock_must_be_at_a_tick() -> None:
    ex, clock = _double()
    clock.now = T0 + timedelta(seconds=100)
    with pytest.raises(ValueError, match="not at a tick"):
        ex.launch(_spec(1, None))


def test_a_probe_runs_nothing_until_started_and_the_held_attempt_works_the_overlap() -> None:
    """On-demand held from tick 0 (overhead 360 s of the 600 s tick); at tick 1 a probe of
    us-east-1b (spot there) is up 150 s into the tick: the held attempt works those 150 s
    and stops then; the new one works from max(360, 150) s into tick 1."""
    from gpuopt.jobs.executors.base import Provisioner

    ex, clock = _double(task=5000.0)
    ex.probe_s = 150.0
    assert isinstance(ex, Provisioner)
    ex.launch(_spec(1, None))
    _at(clock, 2)
    with pytest.raises(LaunchError) as err:  # no spot in us-east-1a at tick 2
        ex.provision(_spec(9, "us-east-1a"))
    assert err.value.kind is FailureKind.CAPACITY
    assert ex.poll(_spec(9, "us-east-1a").cluster_name).state is AttemptState.UNKNOWN
    _at(clock, 1)
    up = ex.provision(_spec(2, "us-east-1b"))
    assert up.ready_at == T0 + timedelta(seconds=GAP + 150)
    assert ex.poll(_spec(2, "us-east-1b").cluster_name).state is AttemptState.PROVISIONED
    assert ex.provision(_spec(2, "us-east-1b")) == up  # idempotent
    held = ex.stop(_spec(1, None).cluster_name)
    assert (held.state, held.ended_at) == (AttemptState.CANCELLED, up.ready_at)
    assert work_done(ex, "sim-job") == (GAP - 360.0) + 150.0
    assert not ex.start(_spec(2, "us-east-1b")).adopted
    assert ex.start(_spec(2, "us-east-1b")).adopted and not ex.overlaps
    _at(clock, 2)
    ex.poll(_spec(2, "us-east-1b").cluster_name)
    assert work_done(ex, "sim-job") == (GAP - 360.0) + 150.0 + (GAP - 360.0)


def test_a_probe_started_while_the_held_attempt_runs_is_reported() -> None:
    ex, clock = _double(task=5000.0)
    ex.launch(_spec(1, None))
    _at(clock, 1)
    ex.provision(_spec(2, "us-east-1b"))
    ex.start(_spec(2, "us-east-1b"))  # the held attempt was never stopped
    assert ex.overlaps == [f"{_spec(2, 'us-east-1b').cluster_name} started while "
                           f"{_spec(1, None).cluster_name} ran the job"]
