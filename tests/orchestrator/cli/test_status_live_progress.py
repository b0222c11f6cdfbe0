"""`status` shows the progress a job last reported, from its log's progress lines or the
contract's progress file, even before the next watch stores it (issue 29.6: `launching`,
"progress none reported" while the log was at step 1,650 of 6,000)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuopt.core.places import Place
from gpuopt.jobs.states import AttemptPhase, JobStatus
from gpuopt.providers.offer import Market
from tests.orchestrator.cli.test_status_spot_policy import _attempt, _status, _write
from tests.orchestrator.reconcile.conftest import submit, write_job


def _open_local_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                    stored_step: int | None) -> str:
    from gpuopt.orchestrator.store import open_store

    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "home"))
    url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    monkeypatch.setenv("GPUOPT_DATABASE_URL", url)
    store = open_store(url)
    try:
        job_id = submit(store, write_job(tmp_path, "longrun", "true"))
        a = _attempt(job_id, 1, Place("aws", "us-east-1"), Market.SPOT, datetime.now(UTC))
        a.status = AttemptPhase.LAUNCHING
        a.host = "this-host"
        a.progress_step, a.progress_total = stored_step, 6000 if stored_step else None
        _write(store, job_id, JobStatus.LAUNCHING, [a], [])
    finally:
        store.close()
    return f"{job_id}-1"


def _workspace(cluster: str) -> Path:
    from gpuopt.orchestrator.reconcile.attempts import attempts_dir

    ws = attempts_dir() / cluster
    ws.mkdir(parents=True)
    return ws


def test_status_reads_progress_lines_of_the_log(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _open_local_job(tmp_path, monkeypatch, stored_step=None)
    ws = _workspace(cluster)
    (ws / "attempt.log").write_text(
        "loading\n[gpuopt] progress {\"step\": 1600, \"total\": 6000}\nstep 1650\n"
        "[gpuopt] progress {\"step\": 1650, \"total\": 6000}\n")
    out = _status(cluster[:-2])
    assert "progress 1650/6000" in out and "none reported" not in out
    doc = json.loads(_status(cluster[:-2], "--json"))
    assert doc["progress"] == {"step": 1650, "total": 6000}


def test_status_reads_the_progress_file_ahead_of_the_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _open_local_job(tmp_path, monkeypatch, stored_step=1000)
    ws = _workspace(cluster)
    (ws / "progress.json").write_text('{"step": 1650, "total": 6000}')
    assert "progress 1650/6000" in _status(cluster[:-2])


def test_stored_progress_stays_when_nothing_newer(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _open_local_job(tmp_path, monkeypatch, stored_step=1000)
    assert "progress 1000/6000" in _status(cluster[:-2])


def test_local_poll_reads_log_progress_lines(tmp_path: Path) -> None:
    from gpuopt.jobs.executors.local import attempt_progress

    log = tmp_path / "attempt.log"
    log.write_text('[gpuopt] progress {"step": 7, "total": 9}\n')
    p = attempt_progress(tmp_path, log)
    assert p is not None and (p.step, p.total) == (7, 9)
    (tmp_path / "progress.json").write_text('{"step": 8, "total": 9}')
    p = attempt_progress(tmp_path, log)
    assert p is not None and p.step == 8  # the contract's file first


def test_status_and_logs_without_an_id_show_the_newest_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tests.orchestrator.cli.test_status_spot_policy import _app

    cluster = _open_local_job(tmp_path, monkeypatch, stored_step=1000)
    res = CliRunner().invoke(_app(), ["status"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert cluster[:-2] in res.stdout and "progress 1000/6000" in res.stdout


def test_status_without_an_id_and_no_job_says_so(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.store import open_store
    from tests.orchestrator.cli.test_status_spot_policy import _app

    url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    monkeypatch.setenv("GPUOPT_DATABASE_URL", url)
    open_store(url).close()
    res = CliRunner().invoke(_app(), ["status"])
    assert isinstance(res.exception, UserError) and res.exception.exit_code == 2
    assert "no job yet" in str(res.exception)
