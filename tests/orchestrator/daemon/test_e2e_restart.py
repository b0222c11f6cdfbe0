"""End to end with real processes (SQLite, local executor): start the daemon, submit the
quickstart example, kill -9 the daemon while the job runs, SIGTERM the next one while the
job still runs, start a third: the job completes exactly once, one attempt, ledger exact."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.net import free_port
from tests.orchestrator.daemon.conftest import (
    REPO,
    daemon_env,
    gpuopt_cmd,
    start_daemon,
    wait_for,
)
from tests.orchestrator.daemon.test_process import healthy, scrape, task_runs

pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def db_rows(db: str, sql: str) -> list[Any]:
    import sqlalchemy as sa

    engine = sa.create_engine(db)
    with engine.connect() as conn:
        rows = list(conn.execute(sa.text(sql)).all())
    engine.dispose()
    return rows


def test_kill_9_and_sigterm_mid_job_then_job_completes_exactly_once(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    work = tmp_path / "job"
    work.mkdir()
    for name in ("quickstart.yaml", "train_counter.py"):
        shutil.copy(REPO / "deploy" / "examples" / name, work / name)
    spec = (work / "quickstart.yaml").read_text()
    # Long enough (~20 s) to outlive two daemons; the program itself is unchanged.
    spec = spec.replace("TRAIN_STEPS: 600", "TRAIN_STEPS: 400").replace(
        "TRAIN_SLEEP: 0.01", "TRAIN_SLEEP: 0.05")
    # Launch at once: this test is about the daemon's restarts, not the spot policy's
    # choice to wait for a cheaper price while the deadline leaves slack.
    spec = spec.replace("spot: auto", "spot: never")
    assert "spot: never" in spec
    assert "TRAIN_SLEEP: 0.05" in spec
    (work / "quickstart.yaml").write_text(spec)
    home = tmp_path / "home"
    db = f"sqlite:///{home / 'data' / 'gpuopt.db'}"
    port = free_port()
    env = daemon_env(home, db, port)

    first = start_daemon(env, tmp_path / "d1.log")
    procs.append(first)
    wait_for(lambda: healthy(port), 30, "daemon 1 up")
    sub = subprocess.run(gpuopt_cmd("submit", str(work / "quickstart.yaml")), env=env,
                         capture_output=True, text=True, timeout=120)
    assert sub.returncode == 0, sub.stderr
    job_id = str(db_rows(db, "SELECT id FROM jobs")[0][0])
    attempts_dir = home / "data" / "attempts"

    def running_pid() -> int | None:
        states = list(attempts_dir.glob("*/state.json"))
        progress = list(attempts_dir.glob("*/progress.json"))
        if not states or not progress:
            return None
        return int(json.loads(states[0].read_text())["pid"])

    job_pid = wait_for(running_pid, 30, "the attempt running with progress")
    assert isinstance(job_pid, int)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    assert alive(job_pid), "kill -9 of the daemon must not take the job with it"

    second = start_daemon(env, tmp_path / "d2.log")
    procs.append(second)
    wait_for(lambda: healthy(port), 30, "daemon 2 up")
    wait_for(lambda: task_runs(port, "reconcile") >= 2, 30, "daemon 2 reconciling")
    [(status,)] = db_rows(db, "SELECT status FROM jobs")
    assert status == "running"  # adopted, not finished yet: the SIGTERM lands mid-job
    t0 = time.monotonic()
    os.kill(second.pid, signal.SIGTERM)
    assert second.wait(15) == 0
    assert time.monotonic() - t0 < 10
    assert alive(job_pid), "SIGTERM of the daemon must leave the job running"

    third = start_daemon(env, tmp_path / "d3.log")
    procs.append(third)
    wait_for(lambda: db_rows(db, "SELECT status FROM jobs")[0][0] == "succeeded", 90,
             "the job to succeed")
    wait_for(lambda: not alive(job_pid), 10, "the job process to end")
    spend = scrape(port)[("gpuopt_spend_usd_total", ())]
    third.send_signal(signal.SIGTERM)
    assert third.wait(15) == 0

    # Exactly once: one attempt row, one workspace, the program started once and ran
    # to the end once (no resume, no second launch).
    from sqlmodel import select

    from gpuopt.core.money import held_cost_micros
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

    store = open_store(db)
    with store.session() as session:
        attempts = list(session.exec(select(AttemptRow)))
    store.close()
    assert len(attempts) == 1
    att = attempts[0]
    assert (att.job_id, att.number, att.status, att.end_reason) == (
        job_id, 1, "ended", "succeeded")
    assert [p.name for p in attempts_dir.iterdir()] == [att.cluster_name]
    log = (attempts_dir / att.cluster_name / "attempt.log").read_text()
    assert log.count("starting from scratch") == 1 and "resuming" not in log
    assert log.count("done: loss") == 1
    [result] = list(work.glob("checkpoints/**/result.json"))
    assert json.loads(result.read_text())["steps"] == 400

    # The ledger adds up: the attempt's cost is its held time x its launch price, and the
    # job's cost (gpuopt status) and the metrics' spend agree with it to the micro-dollar.
    assert att.ended_at is not None
    expected = held_cost_micros(att.price_per_hour_micros, att.started_at, att.ended_at)
    assert att.cost_micros == expected and expected > 0
    st = subprocess.run(gpuopt_cmd("status", job_id, "--json"), env=env,
                        capture_output=True, text=True, timeout=60)
    assert st.returncode == 0, st.stderr
    info = json.loads(st.stdout)
    assert Decimal(info["cost"]) == Decimal(expected) / 1_000_000
    assert info["attempts"] == 1 and info["status"] == "succeeded"
    assert Decimal(repr(spend)) == Decimal(expected) / 1_000_000
