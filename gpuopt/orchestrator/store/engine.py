"""Engine creation: SQLite (file mode 0600, WAL, busy_timeout) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlmodel import Session

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.store.url import resolve_url, shown_url, sqlite_file

SQLITE_BUSY_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class Store:
    engine: Engine
    url: str  # rendered with the password hidden

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def session(self) -> Session:
        """A plain session; the caller commits."""
        return Session(self.engine, expire_on_commit=False)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            yield session

    def close(self) -> None:
        self.engine.dispose()


def _create_private_file(path: Path) -> None:
    """Create the SQLite file (mode 0600) already in WAL mode, atomically: it is built
    under a temporary name and linked into place, so no process ever sees it empty.

    Several processes may open a brand-new database at once (every command opens the
    store). Switching a file to WAL writes its header inside a read transaction, and
    SQLite returns ``database is locked`` at once there, without waiting for the busy
    timeout, when another connection is writing: two processes running ``PRAGMA
    journal_mode=WAL`` on the same empty file failed about one round in ten. On a file
    that is already WAL the pragma only reads."""
    import sqlite3
    import tempfile

    from gpuopt.orchestrator.paths import ensure_private_dir

    if path.exists():
        return
    ensure_private_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    os.close(fd)  # mkstemp: mode 0600
    tmp = Path(tmp_name)
    try:
        try:
            conn = sqlite3.connect(tmp)
            try:
                conn.execute("PRAGMA journal_mode=WAL").fetchall()
            finally:
                conn.close()  # the last connection: the -wal and -shm files go with it
        except sqlite3.Error as err:
            raise OSError(str(err)) from None
        try:
            os.link(tmp, path)
        except FileExistsError:
            return  # another process created it first: the same empty WAL database
        except OSError:  # a file system without hard links: create it empty (O_EXCL)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                return
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(url: str) -> Engine:
    """An engine whose errors never carry the statement's parameters (``hide_parameters``):
    a failed insert must not print a job's spec or anything else it was given."""
    try:
        parsed = make_url(url)
    except Exception:
        raise UserError(
            f"database URL {url!r} is not valid: use sqlite:////path/gpuopt.db or "
            "postgresql+psycopg://user@host:5432/dbname ([database] url / GPUOPT_DATABASE_URL)",
            exit_code=2,
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        file = sqlite_file(url)
        if file is not None:
            try:
                _create_private_file(file)
            except OSError as err:
                raise UserError(
                    f"cannot create the SQLite database {file}: {err.strerror or err}; its "
                    "directory must be writable (read-only file system? no permission?): "
                    "fix it or set [database] url / GPUOPT_DATABASE_URL", exit_code=2,
                ) from None
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
                               hide_parameters=True)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgresql+psycopg2"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=True, hide_parameters=True)
    raise UserError(
        f"database {backend!r} is not supported: use SQLite or PostgreSQL", exit_code=2
    )


def open_store(url: str | None = None, *, migrate: bool = True) -> Store:
    """Open the store at ``url`` (see resolve_url) and bring its schema up to date."""
    from sqlalchemy.exc import OperationalError

    resolved = resolve_url(url)
    engine = make_engine(resolved)
    shown = shown_url(resolved)
    if migrate:
        from gpuopt.orchestrator.store.migrate import upgrade_if_needed

        try:
            upgrade_if_needed(engine)
        except OperationalError as err:
            engine.dispose()
            raise UserError(
                f"cannot open the database {shown}: {err.orig or err}; check [database] url "
                "/ GPUOPT_DATABASE_URL and that the server is running",
                exit_code=2,
            ) from None
    return Store(engine=engine, url=shown)
