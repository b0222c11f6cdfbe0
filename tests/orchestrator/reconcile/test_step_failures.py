"""A job whose reconcile step raises: logged once per kind with its id, counted in
/metrics, failed with the reason after STEP_FAILURES_TO_FAIL steps in a row.

Before: the error vanished (no log line, task_failures_total 0) and the job sat queued
forever (e.g. its model.config file deleted after submit)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.states import JobStatus
from gpuopt.orchestrator.store.jobs_tables import JobRow
from tests.orchestrator.reconcile.conftest import submit, train_run, write_job


def _broken(*args: Any, **kwargs: Any) -> None:
    raise FileNotFoundError("model.config: /gone/config.json")


def test_a_job_whose_step_keeps_raising_is_logged_counted_and_failed(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.health import DaemonHealth
    from gpuopt.orchestrator.daemon.metrics import StoreCollector
    from gpuopt.orchestrator.daemon.tasks import DaemonTasks
    from gpuopt.orchestrator.reconcile import step as reconcile
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    job_id = submit(store, write_job(tmp_path, "broken", train_run(10, 0.0)))
    healthy_id = submit(store, write_job(tmp_path, "healthy", train_run(10, 0.0)))
    real = reconcile._place_and_launch

    def place(store_: Any, executor: Any, settings: Any, job: JobRow, *rest: Any) -> None:
        if job.id == job_id:
            _broken()
        real(store_, executor, settings, job, *rest)

    monkeypatch.setattr(reconcile, "_place_and_launch", place)
    runtime = DaemonHealth("test")
    settings = load_config(None)
    now = datetime.now(UTC)
    tasks = DaemonTasks(store, settings, runtime, lambda: True, lambda: now)
    caplog.set_level(logging.WARNING, logger="gpuopt.reconcile")
    for n in range(1, reconcile.STEP_FAILURES_TO_FAIL):
        tasks.reconcile()
        with store.session() as session:
            job = session.get(JobRow, job_id)
        assert job is not None and job.status == JobStatus.QUEUED and job.step_failures == n
    tasks.reconcile()
    with store.session() as session:
        job = session.get(JobRow, job_id)
        other = session.get(JobRow, healthy_id)
    assert job is not None and job.status == JobStatus.FAILED
    assert job.last_error == (f"the reconcile step failed {reconcile.STEP_FAILURES_TO_FAIL} "
                              "times in a row; last: FileNotFoundError: model.config: "
                              "/gone/config.json")
    assert other is not None and other.status != JobStatus.FAILED  # the others go on
    warned = [r for r in caplog.records if r.levelno == logging.WARNING and job_id in
              r.getMessage()]
    assert len(warned) == 1 and "FileNotFoundError" in warned[0].getMessage()
    [family] = [f for f in StoreCollector(store, runtime).collect()
                if f.name == "gpuopt_job_step_failures"]
    assert [(s.labels, s.value) for s in family.samples if s.name.endswith("_total")] == [
        ({"kind": "FileNotFoundError"}, reconcile.STEP_FAILURES_TO_FAIL)]
    store.close()


def test_a_step_that_recovers_resets_the_count(db_url: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile import step as reconcile
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    job_id = submit(store, write_job(tmp_path, "flaky", train_run(10, 0.0)))
    settings = load_config(None)
    monkeypatch.setattr(reconcile, "_place_and_launch", lambda *a, **k: _broken())
    for _ in range(reconcile.STEP_FAILURES_TO_FAIL - 1):
        report = reconcile.reconcile_once(store, lambda kind: None, settings)  # type: ignore[arg-type,return-value]
        assert report.failed_steps == [(job_id, "FileNotFoundError")]
    monkeypatch.setattr(reconcile, "_place_and_launch", lambda *a, **k: None)
    assert not reconcile.reconcile_once(store, lambda kind: None, settings).errors  # type: ignore[arg-type,return-value]
    with store.session() as session:
        job = session.get(JobRow, job_id)
    assert job is not None and job.step_failures == 0 and job.status == JobStatus.QUEUED
    store.close()
