"""API users: the token printed once, only its SHA-256 stored, revocation at once;
the audit trail of submits and cancels (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command


def test_token_hash_only_and_revocation(db_url: str) -> None:
    from gpuopt.orchestrator.api.users import add_user, authenticate, revoke, token_hash
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.users_repo import list_users

    store = open_store(db_url)
    try:
        now = datetime.now(UTC)
        token = add_user(store, "alice", "nlp", False, now)
        other = add_user(store, "root", None, True, now)
        assert token != other and len(token) > 40
        alice = authenticate(store, token)
        assert alice is not None and (alice.name, alice.team, alice.is_admin) == (
            "alice", "nlp", False)
        assert authenticate(store, token + "x") is None
        with store.session() as session:
            rows = list_users(session)
        assert [r.name for r in rows] == ["alice", "root"]
        assert rows[0].token_sha256 == token_hash(token) != token
        # the token itself is nowhere in the database
        with store.engine.connect() as conn:
            import sqlalchemy as sa

            dumped = repr(conn.execute(sa.text("SELECT * FROM api_users")).fetchall())
        assert token not in dumped and other not in dumped
        revoke(store, "alice", now)
        assert authenticate(store, token) is None
        assert authenticate(store, other) is not None
        from gpuopt.core.errors import UserError

        with pytest.raises(UserError, match="exists"):
            add_user(store, "root", None, False, now)
        with pytest.raises(UserError, match="no live user"):
            revoke(store, "alice", now)
        again = add_user(store, "alice", "cv", False, now)  # revoked: a new token
        assert authenticate(store, token) is None
        back = authenticate(store, again)
        assert back is not None and back.team == "cv"
    finally:
        store.close()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "120"})


def test_users_cli_prints_the_token_once() -> None:
    added = _run("users", "add", "bob", "--team", "vision", "--json")
    assert added.returncode == 0, added.stderr
    shown = json.loads(added.stdout)
    assert shown["name"] == "bob" and shown["token"].startswith("gpuopt_")
    listed = _run("users", "list")
    assert listed.returncode == 0 and "bob" in listed.stdout and "vision" in listed.stdout
    assert shown["token"] not in listed.stdout
    bad = _run("users", "add", "../x")
    assert bad.returncode == 2 and "user name" in bad.stderr and "Traceback" not in bad.stderr
    assert _run("users", "revoke", "bob").returncode == 0
    again = _run("users", "revoke", "bob")
    assert again.returncode == 2 and "no live user 'bob'" in again.stderr
    db = Path(os.environ["GPUOPT_HOME"]) / "data" / "gpuopt.db"
    assert shown["token"].encode() not in db.read_bytes()


def test_submit_and_cancel_are_audited(db_url: str, tmp_path: Path) -> None:
    from gpuopt.orchestrator.reconcile.step import request_cancel
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import find_job
    from gpuopt.orchestrator.store.users_repo import audit_of
    from tests.orchestrator.reconcile.conftest import submit, write_job

    store = open_store(db_url)
    try:
        job_id = submit(store, write_job(tmp_path, "audited", "true"))
        request_cancel(store, job_id, datetime.now(UTC), "carol")
        with store.session() as session:
            trail = audit_of(session, [job_id])
            job_row = find_job(session, job_id)
    finally:
        store.close()
    assert [(a.action, a.job_id) for a in trail] == [("submit", job_id), ("cancel", job_id)]
    assert trail[0].actor.startswith("local:") and trail[1].actor == "carol"
    assert trail[0].at <= trail[1].at and job_row.cancel_requested


def test_users_audit_lists_the_trail(tmp_path: Path) -> None:
    from gpuopt.orchestrator.reconcile.step import request_cancel
    from gpuopt.orchestrator.store import open_store
    from tests.orchestrator.reconcile.conftest import submit, write_job

    store = open_store(None)  # the default store of this GPUOPT_HOME, as the CLI's
    try:
        job_id = submit(store, write_job(tmp_path, "seen", "true"))
        request_cancel(store, job_id, datetime.now(UTC), "dave")
    finally:
        store.close()
    res = _run("users", "audit", "--json", "--job", job_id)
    assert res.returncode == 0, res.stderr
    assert [(r["action"], r["actor"]) for r in json.loads(res.stdout)][1] == ("cancel", "dave")
    table = _run("users", "audit")
    assert "dave" in table.stdout and "cancel" in table.stdout
