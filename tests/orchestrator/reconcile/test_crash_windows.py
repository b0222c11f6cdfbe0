"""Exactly once, by construction: the launching process is killed (SIGKILL, by itself, at
each named point of a launch: jobs.executors.crash_points), a fresh process carries on,
and the user's program has run exactly once, on SQLite and PostgreSQL.

Before: the local executor wrote state.json after starting the program, so a kill -9 in
that window left attempt 1 running unrecorded, and attempt 2 started beside it on the
same checkpoint directory. Killing only the wrapper left the program running on (lost
attempts never had their group killed) while attempt 2 started.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest

from gpuopt.jobs.states import EndReason, FailureKind, JobStatus
from tests.conftest import REPO_ROOT
from tests.orchestrator.reconcile.conftest import submit, write_job

pytestmark = pytest.mark.slow


def _program(runs: Path, seconds: float) -> str:
    """Appends "<attempt> <pid>" to ``runs`` when it starts, then works for a while."""
    return (f"echo \"$GPUOPT_ATTEMPT $$\" >> {shlex.quote(str(runs))}; "
            f"{shlex.quote(sys.executable)} -c 'import time; time.sleep({seconds})'")


def _launcher(db_url: str, attempts: Path, job_id: str, *, crash_at: str | None = None,
              skew_s: float = 0.0, steps: int = 400) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUOPT_CRASH_AT"}
    if crash_at:
        env["GPUOPT_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "tests.orchestrator.reconcile.launcher", db_url,
         str(attempts), job_id, str(skew_s), str(steps)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240)


def _rows(store, job_id: str):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.jobs_repo import attempts_of
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    with store.session() as session:
        return session.get(JobRow, job_id), attempts_of(session, [job_id])[job_id]


# (point, attempts in the end, how attempt 1 ended): after "recorded" attempt 1 is the
# one that runs (adopted); before it, attempt 1 never ran its program.
CASES = [
    ("claimed", 2, FailureKind.NOT_STARTED),
    ("intent", 2, FailureKind.NOT_STARTED),
    ("spawned", 2, FailureKind.NOT_STARTED),
    ("recorded", 1, None),
]


@pytest.mark.parametrize(("point", "n_attempts", "first_failure"), CASES)
def test_kill_9_at_each_launch_point_runs_the_program_once(
        db_url: str, tmp_path: Path, point: str, n_attempts: int,
        first_failure: FailureKind | None) -> None:
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    runs = tmp_path / "runs.txt"
    attempts = tmp_path / "attempts"
    job_id = submit(store, write_job(tmp_path, f"crash-{point}", _program(runs, 1.0)))
    first = _launcher(db_url, attempts, job_id, crash_at=point)
    assert first.returncode == -signal.SIGKILL, first.stderr
    time.sleep(0.5)  # a gate left behind has had time to start (and must not run)
    # A fresh process takes over; past the launch grace when nothing reached the executor.
    second = _launcher(db_url, attempts, job_id, skew_s=180 if point == "claimed" else 0)
    assert second.returncode == 0, second.stderr
    job, rows = _rows(store, job_id)
    assert job.status == JobStatus.SUCCEEDED
    assert len(rows) == n_attempts
    lines = runs.read_text().splitlines()
    assert len(lines) == 1, lines  # the program ran exactly once
    assert lines[0].split()[0] == str(n_attempts)
    if first_failure is not None:
        assert (rows[0].end_reason, rows[0].failure_kind) == (EndReason.FAILED, first_failure)
        assert rows[0].cost_micros == 0 and job.restarts_used == 0
    store.close()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_killing_only_the_wrapper_stops_its_program_before_attempt_2(
        db_url: str, tmp_path: Path) -> None:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import cancel_job, reconcile_once
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    runs = tmp_path / "runs.txt"
    ex = LocalExecutor(tmp_path / "attempts", stop_grace_seconds=2)
    settings = load_config(None)
    job_id = submit(store, write_job(tmp_path, "wrapper", _program(runs, 120)))

    def step_until(cond: Callable[[], bool], what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout  # generous: the machine may be loaded
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            reconcile_once(store, lambda kind: ex, settings)
            time.sleep(0.1)

    def started() -> list[str]:
        return runs.read_text().splitlines() if runs.exists() else []

    step_until(lambda: len(started()) == 1, "attempt 1's program")
    _, rows = _rows(store, job_id)
    state = json.loads((tmp_path / "attempts" / rows[0].cluster_name / "state.json").read_text())
    program = int(started()[0].split()[1])
    assert program != state["pid"] and _alive(program)
    os.kill(state["pid"], signal.SIGKILL)  # the wrapper only; the program lives on
    step_until(lambda: len(_rows(store, job_id)[1]) == 2, "attempt 2")
    _, rows = _rows(store, job_id)
    assert rows[0].end_reason == EndReason.PREEMPTED  # lost
    assert not _alive(program), "attempt 1's program runs on beside attempt 2"
    step_until(lambda: len(started()) == 2, "attempt 2's program")
    second = int(started()[1].split()[1])
    assert _alive(second)
    job = cancel_job(store, lambda kind: ex, job_id, datetime.now(UTC))
    assert job.status == JobStatus.CANCELLED
    deadline = time.monotonic() + 30
    while _alive(second) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(second)
    store.close()
