"""The preemption drill's parts: parsing --preempt-after, the per-job drill files, and the
executor the CLI and the daemon use carrying them out."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuopt.jobs.executors.base import AttemptSpec
from gpuopt.jobs.executors.fault_injection import PreemptionDrills, parse_preempt_after

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _spec(job_id: str, attempt: int) -> AttemptSpec:
    return AttemptSpec(job_id=job_id, attempt=attempt, run="true", checkpoint_dir="/tmp/x")


def test_parse_preempt_after() -> None:
    assert parse_preempt_after("20s") == (20.0,)
    assert parse_preempt_after("20s, 1m30s,500ms") == (20.0, 90.0, 0.5)
    for bad, needle in (("", "one duration per attempt"), ("20s,", "one duration per attempt"),
                        ("soon", "'soon' is not a duration"), ("0s", "more than 0 s"),
                        ("2d", "at most 24h"), (",".join(["1s"] * 11), "at most 10")):
        with pytest.raises(ValueError, match=needle):
            parse_preempt_after(bad)


def test_drills_are_per_job_and_per_attempt(tmp_path: Path) -> None:
    drills = PreemptionDrills(tmp_path / "drills")
    assert drills.kill_after(_spec("a", 1), AT) is None  # no drill: undisturbed
    drills.save("a", (20.0, 45.0))
    assert [drills.kill_after(_spec("a", n), AT) for n in (1, 2, 3)] == [20.0, 45.0, None]
    assert drills.kill_after(_spec("b", 1), AT) is None
    drills.path("b").write_text("{not json")
    assert drills.kill_after(_spec("b", 1), AT) is None  # unreadable: undisturbed
    drills.discard("a")
    assert drills.kill_after(_spec("a", 1), AT) is None
    with pytest.raises(ValueError):
        drills.save("c", (-1.0,))


def test_the_local_executor_of_the_cli_and_daemon_reads_the_drills(tmp_path: Path) -> None:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.reconcile.attempts import ExecutorCache, drills_dir

    executor = ExecutorCache()("local")
    assert isinstance(executor, LocalExecutor)
    assert isinstance(executor.preemption, PreemptionDrills)
    assert executor.preemption.directory == drills_dir()
