"""The daemon's log: one line per job event (launched, preempted, re-placed, finished,
failed, cancelled, adopted), each poll result once, the SDKs' HTTP logging kept out, and
a failing poll counted as a failed task."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuopt.jobs.executors.fault_injection import PreemptAtTimes
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.orchestrator.config import load_config
from gpuopt.orchestrator.daemon.health import DaemonHealth
from gpuopt.orchestrator.daemon.logs import JsonFormatter, setup_logging
from gpuopt.orchestrator.daemon.tasks import DaemonTasks
from gpuopt.orchestrator.reconcile.step import JobEvent, StepReport
from gpuopt.orchestrator.store.jobs_tables import JobRow
from tests.orchestrator.daemon.test_tasks import FakeProvider
from tests.orchestrator.reconcile.conftest import CountingExecutor, submit, train_run, write_job


def _tasks(store, executors=None) -> DaemonTasks:  # type: ignore[no-untyped-def]
    tasks = DaemonTasks(store, load_config(env={}), DaemonHealth("t"), lambda: True,
                        lambda: datetime.now(UTC))
    if executors is not None:
        tasks._executors = executors
    return tasks


def _job_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "gpuopt.jobs"]


def _reconcile_until(tasks: DaemonTasks, store, job_id: str, statuses: Sequence[str],  # type: ignore[no-untyped-def]
                     timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks.reconcile()
        with store.session() as session:
            job = session.get(JobRow, job_id)
            assert job is not None
            if job.status in statuses:
                return job.status
        time.sleep(0.05)
    raise AssertionError(f"{job_id} never reached {statuses}")


def test_every_job_event_is_one_line(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store

    caplog.set_level(logging.DEBUG)
    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    ex = LocalExecutor(tmp_path / "attempts", preemption=PreemptAtTimes((0.3,)))
    # >= 4 s of program (200 x 20 ms): the preemption at 0.3 s lands however loaded the
    # machine (the executor's watcher thread carries it out; test_concurrency.py)
    job_id = submit(store, write_job(tmp_path, "logged", train_run(200, 0.02)))
    tasks = _tasks(store, lambda kind: ex)
    assert _reconcile_until(tasks, store, job_id, ("succeeded",)) == "succeeded"
    events = [(r.event, r.job_id, r.attempt) for r in _job_lines(caplog)  # type: ignore[attr-defined]
              if r.levelno >= logging.INFO]
    assert events == [("launched", job_id, 1), ("preempted", job_id, 1),
                      ("re-placed", job_id, 2), ("finished", job_id, 2)]
    text = [r.getMessage() for r in _job_lines(caplog) if r.levelno >= logging.INFO]
    assert text[0].startswith(f"job {job_id} attempt 1 launched: ") and "/h" in text[0]
    assert "preempted" in text[1] and "re-placing" in text[1]
    store.close()


def test_a_restarted_daemon_logs_adoption_once(caplog: pytest.LogCaptureFixture,
                                               tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store

    url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    store = open_store(url)
    launches: list[str] = []
    first = CountingExecutor(LocalExecutor(tmp_path / "attempts"), launches, threading.Lock())
    job_id = submit(store, write_job(tmp_path, "adopt", train_run(200, 0.01)))
    _reconcile_until(_tasks(store, lambda kind: first), store, job_id, ("running",))
    caplog.clear()
    caplog.set_level(logging.INFO)
    second = LocalExecutor(tmp_path / "attempts")  # "the daemon restarted"
    assert _reconcile_until(_tasks(store, lambda kind: second), store, job_id,
                            ("succeeded",)) == "succeeded"
    kinds = [r.event for r in _job_lines(caplog)]  # type: ignore[attr-defined]
    assert kinds == ["adopted", "finished"]
    assert launches == [f"{launches[0]}"]
    store.close()


def test_cancelled_and_failed_lines_and_reconcile_errors(caplog: pytest.LogCaptureFixture,
                                                         tmp_path: Path) -> None:
    caplog.set_level(logging.INFO)
    tasks = _tasks(None)
    report = StepReport(events=[JobEvent("cancelled", "j1", None, "cancelled by the user"),
                                JobEvent("failed", "j2", 3, "failed with exit code 1")],
                        errors=[("j3", "RuntimeError: boom")])
    tasks.log_step(report)
    lines = [(r.levelname, r.getMessage()) for r in _job_lines(caplog)]
    # A step's error is a debug line each tick: orchestrator.reconcile.step_failures warns once per
    # kind of error (tests/orchestrator/reconcile/test_step_failures.py).
    assert lines == [("INFO", "job j1 cancelled: cancelled by the user"),
                     ("WARNING", "job j2 attempt 3 failed: failed with exit code 1")]


def test_json_log_lines_carry_the_event_fields() -> None:
    record = logging.LogRecord("gpuopt.jobs", logging.INFO, __file__, 1, "job %s %s", ("j", "x"),
                               None)
    record.__dict__.update(event="launched", job_id="j", attempt=1)
    doc = json.loads(JsonFormatter().format(record))
    assert doc["event"] == "launched" and doc["job_id"] == "j" and doc["attempt"] == 1


@pytest.fixture
def three_clouds(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"aws": "ok", "gcp": "no-credentials", "azure": "boom"}
    monkeypatch.setattr("gpuopt.orchestrator.prices.poll.load_providers",
                        lambda clouds: {c: FakeProvider(c, table[c]) for c in clouds})


def test_each_poll_result_is_logged_once_and_a_failed_poll_counts(
    store, three_clouds: None  # type: ignore[no-untyped-def]
) -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    setup_logging("text", stream=stream)
    try:
        runtime = DaemonHealth("t")
        tasks = DaemonTasks(store, load_config(env={}), runtime, lambda: True,
                            lambda: datetime.now(UTC))
        for cloud in ("aws", "gcp", "azure"):
            tasks.poll(cloud)
        # The Azure SDK logs each HTTP request at INFO: kept out of the daemon's log.
        logging.getLogger("azure.core.pipeline.policies.http_logging_policy").info(
            "Request URL: 'https://prices.azure.com/api/retail/prices'")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    lines = stream.getvalue().splitlines()
    assert sum("gcp" in ln and "skipped" in ln for ln in lines) == 1, lines
    assert sum("azure" in ln for ln in lines) == 1, lines
    assert any("WARNING" in ln and "poll-azure failed" in ln and "503" in ln for ln in lines)
    assert not any("Traceback" in ln or "Request URL" in ln for ln in lines)
    failures = runtime.snapshot()[4]
    assert failures == {"poll-azure": 1}
    from prometheus_client import generate_latest

    from gpuopt.orchestrator.daemon.metrics import StoreCollector, make_registry

    text = generate_latest(make_registry(StoreCollector(store, runtime))).decode()
    assert 'gpuopt_daemon_task_failures_total{task="poll-azure"} 1.0' in text
    assert 'gpuopt_daemon_task_failures_total{task="poll-gcp"} 0.0' in text
