"""Migration 0005_lifecycle converts the rows written before failure kinds existed (whose kind was
only told by the prefix of their free-text detail), once; nothing reads that text again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import StatementError

from gpuopt.jobs.states import FailureKind


def test_old_rows_get_their_failure_kind(db_url: str) -> None:
    from alembic import command

    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
    from gpuopt.orchestrator.store.migrate import alembic_config, current_revision
    from gpuopt.orchestrator.store.migrations import HEAD

    engine = sa.create_engine(db_url)
    command.upgrade(alembic_config(engine), "0003_daemon")
    details = {
        1: ("failed", "launch failed: never started: no such attempt"),
        2: ("failed", "launch failed: RuntimeError: boom"),
        3: ("failed", "cannot launch: the local executor needs a local checkpoint directory"),
        4: ("failed", "setup exited with code 2"),
        5: ("failed", "run exited with code 3"),
        6: ("preempted", "preempted (injected)"),
        7: ("succeeded", None),
    }
    t = "2026-01-05 12:00:00"
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO jobs (id, name, status, spec_yaml, submitted_at, plan_json, executor, "
            "restarts_used, cancel_requested, updated_at) VALUES ('j', 'j', 'failed', '', "
            f"'{t}', '{{}}', 'local', 0, false, '{t}')"))
        for n, (reason, detail) in details.items():
            conn.execute(sa.text(
                "INSERT INTO attempts (job_id, number, cluster_name, cloud, region, "
                "instance_type, gpu, gpu_count, market, price_per_hour_micros, status, "
                "created_at, started_at, ended_at, end_reason, detail) VALUES ('j', :n, :c, "
                f"'local', '', '', '', 0, 'on-demand', 0, 'ended', '{t}', '{t}', '{t}', "
                ":r, :d)"), {"n": n, "c": f"gpuopt-j-{n}", "r": reason, "d": detail})
    engine.dispose()
    store = open_store(db_url)  # upgrades to head
    assert current_revision(store.engine) == HEAD
    with store.session() as session:
        kinds = {a.number: a.failure_kind for a in session.execute(
            sa.select(AttemptRow)).scalars()}
        job = session.get(JobRow, "j")
    assert kinds == {1: FailureKind.NOT_STARTED, 2: FailureKind.LAUNCH,
                     3: FailureKind.REFUSED, 4: FailureKind.SETUP, 5: FailureKind.PROGRAM,
                     6: None, 7: None}
    assert job is not None and job.step_failures == 0 and job.status == "failed"
    store.close()


def test_a_status_that_is_no_member_is_refused_on_write(tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    now = datetime.now(UTC)
    with pytest.raises(StatementError, match="'launch failed' is not a valid JobStatus"), \
            store.transaction() as session:
        session.add(JobRow(id="x", name="x", status="launch failed", spec_yaml="",  # type: ignore[arg-type]
                           submitted_at=now, plan_json="{}", executor="local", updated_at=now))
    store.close()
