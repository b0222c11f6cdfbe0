"""Wasted time lands on the attempt that wasted it (issue 29.11: a preempted first attempt
showed "wasted 0.0 s" when no progress report had been seen before it was killed)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpuopt.jobs.states import EndReason
from gpuopt.orchestrator.reconcile.attempts import wasted_seconds
from gpuopt.orchestrator.store.jobs_tables import AttemptRow

START = datetime(2026, 12, 1, 12, tzinfo=UTC)


def _attempt(number: int, first_progress: datetime | None) -> AttemptRow:
    return AttemptRow(job_id="j", number=number, cluster_name=f"j-{number}", cloud="aws",
                      region="us-east-1", market="spot", price_per_hour_micros=1_000_000,
                      created_at=START, started_at=START, first_progress_at=first_progress)


def test_a_preempted_first_attempt_without_progress_seen_wasted_since_its_checkpoint(
        tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    saved = ckpt / "state.json"
    saved.write_text("{}")
    at = (START + timedelta(seconds=3)).timestamp()
    os.utime(saved, (at, at))
    ended = START + timedelta(seconds=4.5)
    wasted = wasted_seconds(_attempt(1, None), ended, EndReason.PREEMPTED, str(ckpt), None)
    assert wasted == 1.5


def test_without_a_checkpoint_the_whole_attempt_is_lost() -> None:
    ended = START + timedelta(seconds=4)
    assert wasted_seconds(_attempt(1, None), ended, EndReason.PREEMPTED, None, None) == 4.0


def test_a_successful_first_attempt_wastes_nothing() -> None:
    ended = START + timedelta(seconds=40)
    assert wasted_seconds(_attempt(1, None), ended, EndReason.SUCCEEDED, None, None) == 0.0
