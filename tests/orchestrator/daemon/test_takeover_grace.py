"""A new leader's first steps wait for the take-over grace instead of being skipped: the
report catch-up is a one-off step, and skipping it would lose the missed weekly report."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpuopt.orchestrator.config import load_config
from gpuopt.orchestrator.daemon.leadership import SqliteFileLock
from gpuopt.orchestrator.daemon.runner import Daemon
from gpuopt.orchestrator.store.daemon_state import NodeInfo
from tests.orchestrator.daemon.test_leader_loss import Recorder


def test_a_step_due_inside_the_grace_waits_and_runs(tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store

    db = tmp_path / "gpuopt.db"
    lock = SqliteFileLock(db)
    lock.acquire_or_refuse()
    store = open_store(f"sqlite:///{db}")
    settings = load_config(env={"GPUOPT_CLOUDS_ENABLED": "[]",
                                "GPUOPT_DAEMON_LEASE_RENEW": "4s"})
    now = datetime.now(UTC)
    daemon = Daemon(settings, f"sqlite:///{db}", store, lock,
                    NodeInfo("t:1:1", "t", 1, now, "standby", None, now, None))
    rec = Recorder("t", daemon.is_leader)
    daemon.tasks = rec  # type: ignore[assignment]
    try:
        # The acquisition took a while: the scheduler's "now + grace" is already close,
        # while the grace (monotonic, from now on) has hardly begun.
        begun = time.monotonic()
        daemon._become_leader(now - timedelta(seconds=daemon.check_every_s - 0.1))
        deadline = time.monotonic() + 30
        while not any(w == "report" for _t, w in rec.started) and time.monotonic() < deadline:
            time.sleep(0.05)
        first = [t for t, w in rec.started if w == "report"]
        assert first, "the report catch-up was skipped"
        assert daemon.is_leader()
        # It was due (asked) inside the grace, and ran rather than being skipped.
        assert all(t - begun < daemon.check_every_s for t in first)
    finally:
        daemon.stop.set()
        daemon.shutdown()
        store.close()
