"""Upload directories go a week after their job ended, or an hour after they were made
when no job refers to them; a live job's stays."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.orchestrator.api.conftest import Api, tar_of


def test_sweep_keeps_what_a_job_needs(api: Api, tmp_path: Path) -> None:
    from gpuopt.jobs.states import JobStatus
    from gpuopt.orchestrator.api.uploads_sweep import sweep_uploads
    from gpuopt.orchestrator.store.jobs_repo import set_job

    root = tmp_path / "uploads"
    live = api.submit("alice", "live", tar_of({"a": b"1"})).json()["id"]
    ended = api.submit("alice", "ended", tar_of({"a": b"2"})).json()["id"]
    orphan = root / "0123abcd"
    orphan.mkdir()
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=2)).timestamp()
    os.utime(orphan, (an_hour_ago, an_hour_ago))
    fresh = root / "fedc4321"
    fresh.mkdir()
    now = datetime.now(UTC)
    with api.store.transaction() as session:
        set_job(session, ended, now, status=JobStatus.SUCCEEDED,
                finished_at=now - timedelta(days=8))
    dirs = {p.name for p in root.iterdir()}
    assert len(dirs) == 4
    assert sweep_uploads(api.store, now, root) == 2
    left = {p.name for p in root.iterdir()}
    assert "fedc4321" in left and "0123abcd" not in left and len(left) == 2
    from gpuopt.orchestrator.store.jobs_repo import find_job

    with api.store.session() as session:
        live_dir = Path(find_job(session, live).spec_path or "").parent.name
        ended_dir = Path(find_job(session, ended).spec_path or "").parent.name
    assert live_dir in left and ended_dir not in left
