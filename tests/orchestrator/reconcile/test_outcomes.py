"""Failures, retries, cancellation and adoption after a restart."""

from __future__ import annotations

import shlex
import sys
import threading
import time
from pathlib import Path

import psutil

from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from tests.orchestrator.reconcile.conftest import (
    CountingExecutor,
    run_until_done,
    submit,
    train_run,
    write_job,
)

FAIL = (f"{shlex.quote(sys.executable)} -c "
        "\"import sys; print('loading data'); print('boom: bad input', file=sys.stderr); "
        "sys.exit(3)\"")


def _attempts(store, job_id: str) -> list[AttemptRow]:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    with store.session() as session:
        return attempts_of(session, [job_id])[job_id]


def test_failing_program_fails_with_exit_code_and_last_lines(sqlite_url: str,
                                                             tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store

    store = open_store(sqlite_url)
    ex = LocalExecutor(tmp_path / "attempts")
    job_id = submit(store, write_job(tmp_path, "fails", FAIL))
    job = run_until_done(store, lambda kind: ex, job_id)
    attempts = _attempts(store, job_id)
    assert job.status == "failed" and job.exit_code == 3
    assert "boom: bad input" in (job.last_error or "")
    assert [a.end_reason for a in attempts] == ["failed"]  # never taken for a preemption
    assert attempts[0].exit_code == 3 and "boom: bad input" in (attempts[0].last_log_lines or "")
    store.close()


def test_max_restarts_on_errors_retries_once(sqlite_url: str, tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store

    store = open_store(sqlite_url)
    ex = LocalExecutor(tmp_path / "attempts")
    job_id = submit(store, write_job(tmp_path, "retry", FAIL, restarts=1))
    job = run_until_done(store, lambda kind: ex, job_id)
    attempts = _attempts(store, job_id)
    assert job.status == "failed" and job.restarts_used == 1
    assert [(a.number, a.end_reason, a.exit_code) for a in attempts] == [
        (1, "failed", 3), (2, "failed", 3)]
    store.close()


def _wait_running(store, ex, job_id: str) -> AttemptRow:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once

    settings = load_config(None)
    for _ in range(400):
        reconcile_once(store, lambda kind: ex, settings)
        attempts = _attempts(store, job_id)
        if attempts and attempts[-1].status == "running" and attempts[-1].progress_step:
            return attempts[-1]
        time.sleep(0.05)
    raise AssertionError("never running")


def test_cancel_mid_run_leaves_no_process(sqlite_url: str, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from gpuopt.orchestrator.reconcile.step import cancel_job
    from gpuopt.orchestrator.store import open_store

    store = open_store(sqlite_url)
    ex = LocalExecutor(tmp_path / "attempts", stop_grace_seconds=2)
    job_id = submit(store, write_job(tmp_path, "cancelme", train_run(10_000, 0.01)))
    attempt = _wait_running(store, ex, job_id)
    import json

    state = json.loads((tmp_path / "attempts" / attempt.cluster_name / "state.json").read_text())
    pgid = state["pgid"]
    job = cancel_job(store, lambda kind: ex, job_id[:12], datetime.now(UTC))
    assert job.status == "cancelled" and job.finished_at is not None
    closed = _attempts(store, job_id)[-1]
    assert closed.status == "ended" and closed.end_reason == "cancelled"
    assert closed.cost_micros is not None and closed.cost_micros > 0  # the ledger keeps it
    left = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if __import__("os").getpgid(proc.pid) == pgid and proc.info["status"] != "zombie":
                left.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    assert left == []
    store.close()


def test_restarted_reconciler_adopts_instead_of_relaunching(sqlite_url: str,
                                                             tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store

    store = open_store(sqlite_url)
    first_log: list[str] = []
    first = CountingExecutor(LocalExecutor(tmp_path / "attempts"), first_log, threading.Lock())
    job_id = submit(store, write_job(tmp_path, "adopt", train_run(300, 0.01)))
    running = _wait_running(store, first, job_id)
    store.close()  # "the process restarts": a new store handle and a new executor
    store = open_store(sqlite_url)
    second_log: list[str] = []
    second = CountingExecutor(LocalExecutor(tmp_path / "attempts"), second_log,
                              threading.Lock())
    job = run_until_done(store, lambda kind: second, job_id)
    assert job.status == "succeeded"
    assert first_log == [running.cluster_name] and second_log == []
    assert [a.number for a in _attempts(store, job_id)] == [1]
    with store.session() as session:
        stored = session.get(JobRow, job_id)
        assert stored is not None and stored.exit_code == 0
    store.close()
