"""Several processes opening a brand-new database at the same moment: every one of them
succeeds, and the schema is created exactly once (issue 13.8: SQLite failed 3 runs of 5
with ``table offer_series already exists``, PostgreSQL 1 of 3 with ``UniqueViolation``).

Issue 14: SQLite then still failed now and then with ``database is locked``, at once and
whatever the busy timeout: every connection ran ``PRAGMA journal_mode=WAL`` on the new,
empty file, and SQLite writes that header change inside a read transaction, where it
never waits for another writer. The file is now created already in WAL mode (built under
a temporary name, linked into place); the connect race below reproduced the error in
about one round in ten before.

The processes import everything first and then wait for a common start instant, so their
migrations really overlap; each round starts from an empty database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from gpuopt.orchestrator.store.engine import SQLITE_BUSY_TIMEOUT_MS
from gpuopt.orchestrator.store.migrations import HEAD

pytestmark = pytest.mark.slow

PROCESSES = 4
ROUNDS = 3
OPEN_AT = """
import sys, time
from gpuopt.orchestrator.store import open_store
import gpuopt.orchestrator.store.engine, gpuopt.orchestrator.store.migrate
import alembic.command, sqlmodel
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
store = open_store(sys.argv[1])
store.close()
print("opened")
"""


CONNECT_AT = """
import sys, time
from gpuopt.orchestrator.store.engine import make_engine
start = float(sys.argv[2])
engine = make_engine(sys.argv[1])
time.sleep(max(0.0, start - time.time()))
with engine.connect():
    pass
print("opened")
"""


def _run_all_at_once(code: str, url: str, tmp: Path,
                     processes: int = PROCESSES) -> list[subprocess.CompletedProcess[str]]:
    start = time.time() + 4.0  # every process has imported by then, even on a busy machine
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")}
    env["GPUOPT_HOME"] = str(tmp)
    procs = [subprocess.Popen([sys.executable, "-c", code, url, repr(start)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(processes)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _open_all_at_once(url: str, tmp: Path) -> list[subprocess.CompletedProcess[str]]:
    return _run_all_at_once(OPEN_AT, url, tmp)


def _assert_all_opened(results: list[subprocess.CompletedProcess[str]], url: str) -> None:
    failed = [r.stderr.strip().splitlines()[-1:] for r in results if r.returncode != 0]
    assert not failed, f"{len(failed)} of {len(results)} failed: {failed}"
    assert all(r.stdout.strip() == "opened" for r in results)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() \
            == [HEAD]
    engine.dispose()


def test_a_new_sqlite_file_is_in_wal_mode_before_any_connection(tmp_path: Path) -> None:
    from gpuopt.orchestrator.store.engine import make_engine

    db = tmp_path / "new" / "gpuopt.db"
    make_engine(f"sqlite:///{db}").dispose()  # creates the file, connects to nothing
    header = db.read_bytes()[:100]
    assert header.startswith(b"SQLite format 3\x00")
    assert header[18:20] == b"\x02\x02"  # file format read/write version 2: WAL
    assert sorted(p.name for p in db.parent.iterdir()) == ["gpuopt.db"]  # no temporary left


def test_connecting_to_a_new_sqlite_file_while_another_connection_writes(
    tmp_path: Path,
) -> None:
    """The race, made deterministic: another process holds the new database's write lock
    (as one migrating it does) while this one connects. Before, the connection's ``PRAGMA
    journal_mode=WAL`` had to write the empty file's header and failed at once with
    ``database is locked`` (SQLite does not wait for the busy timeout there); on a file
    created in WAL mode the pragma has nothing to write, and the connection succeeds."""
    import sqlite3

    from gpuopt.orchestrator.store.engine import make_engine

    db = tmp_path / "new" / "gpuopt.db"
    engine = make_engine(f"sqlite:///{db}")
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("CREATE TABLE t (x INTEGER)")
        started = time.monotonic()
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert time.monotonic() - started < SQLITE_BUSY_TIMEOUT_MS / 1000  # no lock wait
        writer.execute("COMMIT")
    finally:
        writer.close()
        engine.dispose()


def test_processes_connecting_to_a_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        url = f"sqlite:///{tmp_path / f'round{round_}' / 'gpuopt.db'}"
        results = _run_all_at_once(CONNECT_AT, url, tmp_path, processes=8)
        failed = [r.stderr.strip().splitlines()[-1:] for r in results if r.returncode != 0]
        assert not failed, f"{len(failed)} of {len(results)} failed: {failed}"


def test_processes_racing_on_a_new_sqlite_file_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        url = f"sqlite:///{tmp_path / f'round{round_}' / 'gpuopt.db'}"
        _assert_all_opened(_open_all_at_once(url, tmp_path), url)


@pytest.mark.postgres
def test_processes_racing_on_a_new_postgres_database_all_succeed(
    pg_url: str, tmp_path: Path
) -> None:
    for _ in range(ROUNDS):
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:  # an empty database again
            conn.execute(sa.text("DROP SCHEMA public CASCADE"))
            conn.execute(sa.text("CREATE SCHEMA public"))
        engine.dispose()
        _assert_all_opened(_open_all_at_once(pg_url, tmp_path), pg_url)
