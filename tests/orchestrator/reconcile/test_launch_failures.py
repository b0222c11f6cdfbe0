"""Launches that fail: classified (refused / capacity / never started), bounded by
max_restarts_on_errors, backed off, never counted as a failure of the user's program."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, LaunchError, LaunchResult
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.jobs.states import AttemptPhase, EndReason, FailureKind, JobStatus
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from tests.orchestrator.reconcile.conftest import (
    CountingExecutor,
    submit,
    train_run,
    write_job,
)


def _attempts(store: Any, job_id: str) -> list[AttemptRow]:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    with store.session() as session:
        return attempts_of(session, [job_id])[job_id]


def _job(store: Any, job_id: str) -> JobRow:
    with store.session() as session:
        job = session.get(JobRow, job_id)
    assert job is not None
    return job


def _texts(store: Any, job_id: str) -> list[str]:
    from gpuopt.orchestrator.store.jobs_repo import events_of

    with store.session() as session:
        events = [e.message for e in events_of(session, job_id)]
    job = _job(store, job_id)
    return [*events, job.last_error or "", *(a.detail or "" for a in _attempts(store, job_id))]


def _steps(store: Any, ex: Any, start: datetime, seconds: range) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once

    settings = load_config(None)
    for s in seconds:
        report = reconcile_once(store, lambda kind: ex, settings, start + timedelta(seconds=s))
        assert not report.errors, report.errors


def test_a_launch_refused_with_a_user_error_is_not_a_program_failure(
        db_url: str, tmp_path: Path) -> None:
    """The misfire: "cannot launch: ..." was taken for the user's program failing: it spent
    the job's restarts relaunching something unfixable and said "exit code None"."""
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    job_file = write_job(tmp_path, "refused", train_run(10, 0.0), restarts=2)
    job_file.write_text(job_file.read_text().replace(f"dir: {tmp_path / 'ckpt'}",
                                                     "dir: s3://team-bucket/run"))
    log: list[str] = []
    ex = CountingExecutor(LocalExecutor(tmp_path / "attempts"), log, threading.Lock())
    job_id = submit(store, job_file)
    _steps(store, ex, datetime.now(UTC), range(0, 60, 5))
    job = _job(store, job_id)
    [attempt] = _attempts(store, job_id)
    assert log == [attempt.cluster_name]  # launched once, never retried
    assert job.status == JobStatus.FAILED and job.restarts_used == 0
    assert job.exit_code is None
    assert (job.last_error or "").startswith("cannot launch: the local executor needs a local "
                                             "checkpoint directory")
    assert (attempt.end_reason, attempt.failure_kind) == (EndReason.FAILED, FailureKind.REFUSED)
    assert attempt.cost_micros == 0 and attempt.ended_at == attempt.started_at
    assert not any("exit code None" in t or "exit code" in t for t in _texts(store, job_id))
    store.close()


class NoCapacity:
    """An executor whose launches find no capacity (as SkyPilot's ResourcesUnavailable)."""

    kind = "local"

    def __init__(self) -> None:
        self.launched: list[AttemptSpec] = []

    def launch(self, spec: AttemptSpec) -> LaunchResult:
        self.launched.append(spec)
        raise LaunchError(f"no capacity for {spec.placement.gpu} in {spec.placement.region}",
                          FailureKind.CAPACITY)

    def stop(self, cluster_name: str) -> Any:
        return None

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"not expected: {name}")


def test_capacity_failures_back_off_re_place_and_are_bounded(db_url: str,
                                                             tmp_path: Path) -> None:
    """Before: a launch that raised was re-queued every tick (27 attempts in 25 s). (A job
    the deadline spot policy decides treats spot capacity failures as observations: see
    the next test; this one is ``spot: always``.)"""
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    job_file = write_job(tmp_path, "nocap", train_run(10, 0.0), restarts=2)
    job_file.write_text(job_file.read_text().replace(
        "  max_price_per_hour: 1.00\n", "  max_price_per_hour: 1.00\n  spot: always\n"))
    job_id = submit(store, job_file)
    ex = NoCapacity()
    t0 = datetime.now(UTC)
    _steps(store, ex, t0, range(0, 25))  # one tick a second for 25 s
    assert len(ex.launched) == 1
    assert _job(store, job_id).status == JobStatus.QUEUED
    _steps(store, ex, t0, range(25, 400, 5))
    # 1 launch + 2 retries (max_restarts_on_errors: 2), 30 s then 60 s apart.
    assert len(ex.launched) == 3
    attempts = _attempts(store, job_id)
    gaps = [(b.started_at - a.started_at).total_seconds() for a, b in pairwise(attempts)]
    assert gaps == [30, 60]
    places = [(a.cloud, a.region, a.zone) for a in attempts]
    assert places[1] != places[0] and places[2] != places[1]  # re-placed elsewhere
    job = _job(store, job_id)
    assert job.status == JobStatus.FAILED and job.restarts_used == 2
    assert (job.last_error or "").startswith("no capacity: no capacity for ")
    assert "max_restarts_on_errors 2" in (job.last_error or "")
    assert all(a.failure_kind == FailureKind.CAPACITY and a.cost_micros == 0 for a in attempts)
    store.close()


def test_under_the_deadline_spot_policy_no_spot_capacity_spends_no_retry(
        db_url: str, tmp_path: Path) -> None:
    """``spot: auto`` with a deadline: a spot launch without capacity tells the policy
    that place had no spot; it spends no retry and starts no back-off, the policy tries
    a place not known to be out of spot (never the one that just failed, in the same
    decision interval), and falls back to on-demand while the deadline still allows it."""
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    job_id = submit(store, write_job(tmp_path, "nocap-auto", train_run(10, 0.0)))
    ex = NoCapacity()
    t0 = datetime.now(UTC)
    # Every 20 s (the decision interval) until the job ends, within its 2 h deadline: how
    # many spot places it tries first depends on how many the snapshot sells, not fixed.
    for start in range(0, 2 * 3600, 10 * 60):
        _steps(store, ex, t0, range(start, start + 10 * 60, 20))
        if _job(store, job_id).status == JobStatus.FAILED:
            break
    attempts = _attempts(store, job_id)
    job = _job(store, job_id)
    assert all(a.failure_kind == FailureKind.CAPACITY for a in attempts)
    *spot_tries, last = attempts
    assert len(spot_tries) >= 2 and all(a.market == "spot" for a in spot_tries)
    # on-demand (no capacity either, here): that one is an error, with no retries left
    assert last.market == "on-demand" and job.status == JobStatus.FAILED
    assert job.deadline_at is not None and last.started_at < job.deadline_at
    assert job.restarts_used == 0 and (job.last_error or "").startswith("no capacity")
    tried: dict[int, set[tuple[str, str, str | None]]] = {}
    for a in spot_tries:
        tick = int((a.started_at - t0).total_seconds() // 20)
        place = (a.cloud, a.region, a.zone)
        assert place not in tried.setdefault(tick, set())  # never twice in one interval
        tried[tick].add(place)
    assert len(attempts) == len(ex.launched)
    store.close()


def test_an_attempt_that_never_started_is_retried_free_and_not_billed(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher died between its claim and the executor: after the grace period the
    attempt is given up (nothing was billed for those 2 minutes) and the job placed again
    without spending a restart."""
    from gpuopt.orchestrator.reconcile import step as reconcile
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    job_id = submit(store, write_job(tmp_path, "lost", train_run(20, 0.0)))
    ex = LocalExecutor(tmp_path / "attempts")
    real_launch = reconcile._launch
    monkeypatch.setattr(reconcile, "_launch", lambda *a, **k: None)  # "dies" after claim
    t0 = datetime.now(UTC)
    _steps(store, ex, t0, range(0, 1))
    monkeypatch.setattr(reconcile, "_launch", real_launch)
    _steps(store, ex, t0, range(60, 61))  # within the grace period: still waiting
    assert [a.status for a in _attempts(store, job_id)] == [AttemptPhase.LAUNCHING]
    _steps(store, ex, t0, range(150, 151))
    first = _attempts(store, job_id)[0]
    assert (first.end_reason, first.failure_kind) == (EndReason.FAILED, FailureKind.NOT_STARTED)
    assert first.cost_micros == 0 and first.wasted_seconds == 0
    assert first.ended_at == first.started_at
    # A late launcher of attempt 1 can no longer start it: it was abandoned for good.
    ex.launch(AttemptSpec(job_id=job_id, attempt=1, run="echo late", checkpoint_dir=str(
        tmp_path / "ckpt")))
    assert not (tmp_path / "attempts" / first.cluster_name / "state.json").exists()
    job = _job(store, job_id)
    assert job.restarts_used == 0 and job.status in (JobStatus.LAUNCHING, JobStatus.RUNNING)
    assert [a.number for a in _attempts(store, job_id)] == [1, 2]
    ex.stop(_attempts(store, job_id)[1].cluster_name)
    store.close()
