"""Local-executor specifics: injected preemption, progress, process identity."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpuopt.jobs.executors import local_proc
from gpuopt.jobs.executors.base import AttemptSpec, AttemptState
from gpuopt.jobs.executors.fault_injection import PreemptAtTimes, PreemptFromSpotTrace
from gpuopt.jobs.executors.local import LocalExecutor
from tests.jobs.executors.harness import processes_of, wait_for, wait_terminal


def _spec(tmp: Path, run: str, attempt: int = 1) -> AttemptSpec:
    return AttemptSpec(job_id="loc", attempt=attempt, run=run, checkpoint_dir=str(tmp / "ck"))


def test_injected_preemption_kills_the_group_and_reports_preempted(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "a", preemption=PreemptAtTimes((0.5,)))
    spec = _spec(tmp_path, "sleep 30 & sleep 30")
    ex.launch(spec)
    status, seen = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.PREEMPTED
    assert AttemptState.RUNNING in seen
    assert processes_of(spec.cluster_name, tmp_path) == []
    assert status.ended_at is not None and status.started_at is not None
    assert status.ended_at - status.started_at >= timedelta(seconds=0.5)


def test_a_program_that_fails_before_its_preemption_time_is_failed(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "a", preemption=PreemptAtTimes((0.3,)))
    spec = _spec(tmp_path, "exit 4")
    ex.launch(spec)
    time.sleep(0.5)  # past the planned preemption: the exit code still decides
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert (status.state, status.exit_code) == (AttemptState.FAILED, 4)


def test_preemption_is_carried_out_by_a_restarted_executor_too(tmp_path: Path) -> None:
    first = LocalExecutor(tmp_path / "a", preemption=PreemptAtTimes((0.4,)))
    spec = _spec(tmp_path, "sleep 30")
    first.launch(spec)
    # A second instance without any schedule of its own still honours the persisted one.
    second = LocalExecutor(tmp_path / "a")
    status, _ = wait_terminal(second, spec.cluster_name)
    assert status.state is AttemptState.PREEMPTED


def test_attempts_past_the_schedule_run_undisturbed(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "a", preemption=PreemptAtTimes((0.1,)))
    spec = _spec(tmp_path, "sleep 0.4", attempt=2)
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED


def test_progress_file_is_reported(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "a")
    spec = _spec(tmp_path, 'echo \'{"step": 7, "total": 70}\' > "$GPUOPT_PROGRESS_FILE"; sleep 30')
    ex.launch(spec)
    status, _ = wait_for(ex, spec.cluster_name, lambda s: s.progress is not None)
    assert (status.progress.step, status.progress.total) == (7, 70)  # type: ignore[union-attr]
    ex.stop(spec.cluster_name)


def test_a_reused_pid_is_not_taken_for_the_attempt(tmp_path: Path) -> None:
    me = os.getpid()
    created = local_proc.create_time(me)
    assert created is not None
    assert local_proc.leader_alive(me, created)
    assert not local_proc.leader_alive(me, created - 60)  # same pid, different process


def test_spot_trace_preempts_at_the_first_turn_to_unavailable() -> None:
    epoch = datetime(2025, 1, 1, tzinfo=UTC)
    trace = PreemptFromSpotTrace((0, 0, 1, 1, 0, 0, 0, 1), gap_seconds=600, epoch=epoch,
                                 time_scale=0.001)  # 0.6 s per tick
    spec = AttemptSpec(job_id="t", attempt=1, run="true", checkpoint_dir="/tmp/x")
    # Launched at tick 0: the 0 -> 1 turn is at tick 2 = 1.2 s.
    assert abs(trace.kill_after(spec, epoch) - 1.2) < 1e-9  # type: ignore[operator]
    # Launched during the outage (tick 3.5): the next turn is at tick 7.
    at = epoch + timedelta(seconds=0.6 * 3.5)
    assert abs(trace.kill_after(spec, at) - 0.6 * 3.5) < 1e-9  # type: ignore[operator]
    # After the last turn: never.
    assert trace.kill_after(spec, epoch + timedelta(seconds=0.6 * 7.5)) is None
