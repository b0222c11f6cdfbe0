"""Small daemon pieces: log formatting and redaction, the leadership primitives, status."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpuopt.orchestrator.daemon.leadership import (
    DaemonAlreadyRunning,
    PgAdvisoryLeadership,
    SqliteFileLock,
    sqlite_daemon_running,
)
from gpuopt.orchestrator.daemon.logs import JsonFormatter, redact, setup_logging


def test_redact_masks_url_passwords_and_password_pairs() -> None:
    text = ("cannot open postgresql+psycopg://gpuopt:hunter2@db:5432/x; smtp password=s3cr3t "
            "token: abc123, user alice")
    out = redact(text)
    for secret in ("hunter2", "s3cr3t", "abc123"):
        assert secret not in out
    assert "postgresql+psycopg://gpuopt:***@db:5432/x" in out and "user alice" in out


def test_json_logs_are_one_object_per_line_with_extras_and_exceptions() -> None:
    stream = io.StringIO()
    setup_logging("json", stream=stream)
    log = logging.getLogger("gpuopt.test")
    try:
        log.info("poll %s done\nsecond line", "aws", extra={"cloud": "aws", "took": 1.5})
        try:
            raise RuntimeError("boom with postgresql://u:pw@h/db")
        except RuntimeError:
            log.exception("failed")
    finally:
        logging.getLogger().handlers.clear()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == "poll aws done\nsecond line" and first["level"] == "info"
    assert first["cloud"] == "aws" and first["took"] == 1.5 and first["logger"] == "gpuopt.test"
    assert datetime.fromisoformat(first["ts"]).tzinfo is not None
    assert "RuntimeError" in second["exc"] and "pw@" not in second["exc"]


def test_json_formatter_handles_non_json_extras() -> None:
    rec = logging.LogRecord("x", logging.WARNING, __file__, 1, "m", None, None)
    rec.when = datetime(2026, 1, 1, tzinfo=UTC)
    assert json.loads(JsonFormatter().format(rec))["when"].startswith("2026-01-01")


def test_sqlite_lock_refuses_a_second_holder_in_another_process(tmp_path: Path) -> None:
    db = tmp_path / "gpuopt.db"
    assert sqlite_daemon_running(db) is None
    lock = SqliteFileLock(db)
    lock.acquire_or_refuse()
    try:
        assert sqlite_daemon_running(db) == f"pid {os.getpid()} on {os.uname().nodename}"
        code = ("from pathlib import Path; from gpuopt.orchestrator.daemon.leadership import "
                f"SqliteFileLock; SqliteFileLock(Path({str(db)!r})).acquire_or_refuse()")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode != 0 and "DaemonAlreadyRunning" in res.stderr
        assert f"pid {os.getpid()}" in res.stderr
    finally:
        lock.release()
    assert sqlite_daemon_running(db) is None
    assert issubclass(DaemonAlreadyRunning, Exception) and DaemonAlreadyRunning.exit_code == 2


@pytest.mark.postgres
def test_advisory_lock_one_holder_release_and_lost_session(pg_url: str) -> None:
    import sqlalchemy as sa

    a, b = PgAdvisoryLeadership(pg_url, key=4242), PgAdvisoryLeadership(pg_url, key=4242)
    try:
        assert a.try_acquire() and a.confirm()
        assert not b.try_acquire() and not b.confirm()
        a.release()
        assert not a.confirm()
        assert b.try_acquire() and b.confirm()
        # The server ends b's session (as when its host vanishes): b sees it and steps
        # down, and a takes over.
        admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            killed = conn.execute(sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_locks "
                "WHERE locktype = 'advisory' AND objid = 4242")).all()
        admin.dispose()
        assert killed == [(True,)]
        assert not b.confirm()
        assert a.try_acquire() and a.confirm()
    finally:
        a.release()
        b.release()


def test_status_reports_leader_polls_and_next_report(store) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.status import gather_status, render_text
    from gpuopt.orchestrator.store.daemon_state import NodeInfo, heartbeat, record_poll

    now = datetime(2026, 11, 30, 9, tzinfo=UTC)  # Monday; W48's report went at 08:00
    settings = load_config(env={"GPUOPT_REPORT_TIMEZONE": "UTC"})
    node = NodeInfo("h:7:1", "h", 7, now, "leader", now, now, "127.0.0.1:9464")
    heartbeat(store, node, role="leader", leader_since=now - timedelta(hours=1), at=now)
    stale = NodeInfo("g:8:1", "g", 8, now, "standby", None, now, None)
    heartbeat(store, stale, role="standby", leader_since=None, at=now - timedelta(hours=1))
    record_poll(store, "aws", status="ok", error=None, at=now - timedelta(minutes=3))
    url = "postgresql://x" if store.dialect == "postgresql" else "sqlite://"
    status = gather_status(store, settings, url, now)
    assert status.running and status.leader is not None and status.leader["pid"] == 7
    assert status.standbys == []  # the stale node is not counted
    assert status.next_report_at == datetime(2026, 12, 7, 8, tzinfo=UTC)
    text = render_text(status, "UTC")
    assert "leader:   h pid 7" in text and "aws" in text and "2026-12-07 08:00" in text
    assert json.loads(json.dumps(status.to_json()))["polls"][0]["cloud"] == "aws"
