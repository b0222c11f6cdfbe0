"""Issue 26.5: a full workspace disk at launch. The launch fails with ENOSPC, and so does
the stop that must precede the close (the local executor's ``abandoned`` marker). The
attempt is kept as ``stop_failed`` -- its cost ended at its start, since it never ran
-- the stop is retried with back-off and logged once per kind, nothing new starts for
the job meanwhile, and once the disk has room the close finishes and the job runs.

Before: the ENOSPC escaped the step; after 5 steps the job was failed while its attempt
stayed ``launching``, billed to "now" forever (`jobs` and gpuopt_spend_usd_total kept
growing), and every tick logged a warning with a traceback.

The disk is real: a tmpfs of 256 KiB mounted for the test (root may mount here, and in
CI); where mounting is not allowed the first test is skipped and the second, the same
failure raised by the executor's stop, still runs.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpuopt.jobs.states import AttemptPhase, EndReason, FailureKind, JobStatus
from tests.e2e.cli import gpuopt_command
from tests.orchestrator.reconcile.conftest import submit, train_run, write_job

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC
    return filler


def _rows(store, job_id):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.jobs_repo import job_with_attempts

    with store.session() as session:
        return job_with_attempts(session, job_id)


def test_full_workspace_disk_at_launch(db_url: str, tmp_path: Path, small_disk: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.fleet_figures import fleet_figures
    from gpuopt.orchestrator.store.ledger_repo import attempt_cost_micros

    store = open_store(db_url)
    settings = load_config(None)
    ex = LocalExecutor(small_disk / "attempts", stop_grace_seconds=1)
    (small_disk / "attempts").mkdir()
    job_id = submit(store, write_job(tmp_path, "fulldisk", train_run(40, 0.005), restarts=1))
    filler = _fill(small_disk)
    t0 = datetime.now(UTC)

    def step(at: datetime):  # type: ignore[no-untyped-def]
        report = reconcile_once(store, lambda kind: ex, settings, at)
        assert report.errors == [], report.errors  # the step itself never fails
        return report

    caplog.set_level(logging.DEBUG, logger="gpuopt.reconcile")
    report = step(t0)
    job, attempts = _rows(store, job_id)
    (a,) = attempts
    assert a.status == AttemptPhase.STOP_FAILED and a.stop_error_kind == "OSError"
    assert (a.end_reason, a.failure_kind) == (EndReason.FAILED, FailureKind.LAUNCH)
    assert a.ended_at == a.started_at and a.cost_micros == 0  # it never ran: costs nothing
    assert job.status.is_live and job.step_failures == 0
    assert report.stop_failed == [(job_id, 1, "OSError")]
    later = t0 + timedelta(hours=5)
    assert attempt_cost_micros(a, later) == 0
    figures = fleet_figures(store, later).jobs
    assert figures is not None and figures.spend_micros == 0  # no cost "to now"
    assert figures.attempts_by_status["stop_failed"] == 1

    # within the back-off nothing is tried; past it, the stop fails again (still full)
    for at in (t0 + timedelta(seconds=10), t0 + timedelta(seconds=31),
               t0 + timedelta(seconds=92), t0 + timedelta(seconds=215)):
        step(at)
    job, attempts = _rows(store, job_id)
    assert len(attempts) == 1 and attempts[0].stop_failures == 4  # 30 s, 60 s, 120 s apart
    warned = [r for r in caplog.records
              if r.levelno >= logging.WARNING and "stopping it failed" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in warned]  # once per kind, not per tick
    shown = subprocess.run([*gpuopt_command(), "status", job_id], capture_output=True,
                           text=True, timeout=60,
                           env={**os.environ, "GPUOPT_DATABASE_URL": db_url, "COLUMNS": "100"})
    assert "stop_failed" in shown.stdout and "stopping it failed 4 time(s)" in \
        " ".join(shown.stdout.split()), shown.stdout

    filler.unlink()  # the operator made room
    at = t0 + timedelta(seconds=215 + 241)
    step(at)
    job, attempts = _rows(store, job_id)
    assert attempts[0].status == AttemptPhase.ENDED and attempts[0].cost_micros == 0
    assert job.status == JobStatus.QUEUED  # a launch failure: retried after its back-off
    deadline = datetime.now(UTC) + timedelta(seconds=120)
    while job.status.is_live:
        assert datetime.now(UTC) < deadline, "the job did not finish once the disk had room"
        at += timedelta(minutes=1)
        step(at)
        job, attempts = _rows(store, job_id)
    assert job.status == JobStatus.SUCCEEDED, job.last_error
    assert [x.status for x in attempts] == [AttemptPhase.ENDED, AttemptPhase.ENDED]
    store.close()


class _StopFails:
    """A local executor whose stop raises what a full disk raises, ``failures`` times."""

    def __init__(self, inner, failures: int) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.kind, self.left = inner, inner.kind, failures

    def stop(self, name: str):  # type: ignore[no-untyped-def]
        if self.left > 0:
            self.left -= 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.inner.stop(name)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)


def test_a_failed_stop_of_a_cancelled_running_attempt_freezes_its_cost(
        db_url: str, tmp_path: Path) -> None:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import set_job
    from gpuopt.orchestrator.store.ledger_repo import attempt_cost_micros

    store = open_store(db_url)
    settings = load_config(None)
    ex = _StopFails(LocalExecutor(tmp_path / "attempts", stop_grace_seconds=1), failures=1)
    job_id = submit(store, write_job(tmp_path, "cancelfail", train_run(100000, 0.01)))
    t0 = datetime.now(UTC)
    at = t0
    while _rows(store, job_id)[0].status != JobStatus.RUNNING:
        at += timedelta(seconds=1)
        assert reconcile_once(store, lambda kind: ex, settings, at).errors == []
        assert at < t0 + timedelta(minutes=10), "never ran"
    with store.transaction() as session:
        set_job(session, job_id, cancel_requested=True)
    at += timedelta(seconds=5)
    reconcile_once(store, lambda kind: ex, settings, at)
    job, (a,) = _rows(store, job_id)
    assert a.status == AttemptPhase.STOP_FAILED and a.end_reason == EndReason.CANCELLED
    assert a.ended_at == at  # known to run until this step
    frozen = attempt_cost_micros(a, at + timedelta(days=3))
    assert frozen == a.cost_micros and frozen > 0
    assert job.status.is_live  # not cancelled while something of it may run
    at += timedelta(seconds=31)
    assert reconcile_once(store, lambda kind: ex, settings, at).errors == []
    job, (a,) = _rows(store, job_id)
    assert (a.status, job.status) == (AttemptPhase.ENDED, JobStatus.CANCELLED)
    assert a.cost_micros == frozen
    assert ex.inner.list_running() == []
    store.close()
