"""Issue 13.3: a progress step beyond 2^31 (a token count) or beyond 2^63 never wedges a job.

Before: the INTEGER column overflowed on PostgreSQL (2^31) and SQLite (2^63); every
reconcile step failed and the job stayed `launching` though its program exited 0.
"""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path

import pytest

from gpuopt.jobs.executors.contract import MAX_PROGRESS, parse_progress
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.orchestrator.store.jobs_tables import AttemptRow
from tests.orchestrator.reconcile.conftest import run_until_done, submit, write_job


def _writer(step: int, total: int) -> str:
    code = ("import json, os; "
            f"open(os.environ['GPUOPT_PROGRESS_FILE'], 'w').write(json.dumps("
            f"{{'step': {step}, 'total': {total}}}))")
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


@pytest.mark.parametrize(("step", "total", "stored"), [
    (2**40, 2**41, (2**40, 2**41)),          # beyond PostgreSQL INTEGER: now BIGINT
    (MAX_PROGRESS, MAX_PROGRESS, (MAX_PROGRESS, MAX_PROGRESS)),
    (2**70, 2**71, (None, None)),            # beyond BIGINT: ignored, not a failed step
])
def test_huge_progress_is_stored_or_ignored_and_the_job_succeeds(
        db_url: str, tmp_path: Path, step: int, total: int,
        stored: tuple[int | None, int | None]) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    store = open_store(db_url)
    try:
        ex = LocalExecutor(tmp_path / "attempts")
        job_id = submit(store, write_job(tmp_path, "big", _writer(step, total)))
        job = run_until_done(store, lambda kind: ex, job_id, timeout=60)
        assert job.status == "succeeded"
        with store.session() as session:
            attempts: list[AttemptRow] = attempts_of(session, [job_id])[job_id]
        assert (attempts[-1].progress_step, attempts[-1].progress_total) == stored
    finally:
        store.close()


def test_out_of_range_values_are_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gpuopt.jobs.executors.contract"):
        assert parse_progress(f'{{"step": {2**63}, "total": 10}}') is None
        kept = parse_progress(f'{{"step": 5, "total": {2**64}}}')
    assert kept is not None and (kept.step, kept.total) == (5, None)
    assert sum("ignored" in r.getMessage() for r in caplog.records) == 2
    assert parse_progress("[" * 100_000) is None  # bounded text, no RecursionError
    assert parse_progress('{"step": 1e999}') is None
