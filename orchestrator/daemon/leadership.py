"""Who does the work.

SQLite: exactly one daemon per database file. An exclusive ``fcntl.flock`` on
``<db>.daemon.lock`` is taken at start; a second daemon fails at once with a message
naming the holder (pid, host) and exit code 2. The kernel drops the lock when the
process dies, however it dies.

PostgreSQL: any number of daemons; the leader holds a *session-level advisory lock*
(``pg_try_advisory_lock``) on a dedicated connection. The lock lives exactly as long as
that session: a leader that exits or is killed (even ``kill -9``) closes its socket, the
server releases the lock at once, and a stand-by's next try (every few seconds) wins.
No clock comparison between hosts is involved (a lease row with expiry would depend on
clocks and hand over only after the TTL). The leader re-checks the lock on its own
connection every ``lease_renew``; if that check fails (connection lost, lock gone) it
stops working at once, and it never starts a job when its last successful check is
older than ``lease_ttl``. TCP keepalives on the lock connection make the server notice a
vanished leader host (no FIN, e.g. a power cut) within about 25 s.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import socket
from pathlib import Path
from typing import Any, Protocol

from gpuopt.core.errors import UserError

log = logging.getLogger("gpuopt.daemon.leadership")

# One advisory lock key per database (advisory locks are scoped to the database).
LOCK_KEY = int.from_bytes(hashlib.sha256(b"gpuopt-daemon-leader").digest()[:8], "big",
                          signed=True)
PG_KEEPALIVES = "keepalives=1 keepalives_idle=10 keepalives_interval=5 keepalives_count=3"


class DaemonAlreadyRunning(UserError):
    exit_code = 2


class Leadership(Protocol):
    kind: str

    def try_acquire(self) -> bool:
        """Become the leader if nobody is; True when this process leads."""

    def confirm(self) -> bool:
        """Still the leader? False = stop working now."""

    def release(self) -> None:
        """Give the leadership up (idempotent)."""


def lock_file_for(db_file: Path) -> Path:
    return db_file.with_name(db_file.name + ".daemon.lock")


class SqliteFileLock:
    """The single-daemon lock of a SQLite database; acquired once, at start."""

    kind = "sqlite-lock-file"

    def __init__(self, db_file: Path) -> None:
        self.db_file = db_file
        self.path = lock_file_for(db_file)
        self._fd: int | None = None

    def acquire_or_refuse(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown pid"
            os.close(fd)
            raise DaemonAlreadyRunning(
                f"another gpuopt daemon ({holder}) is already running on "
                f"{self.db_file}; stop it first (a SQLite "
                "database allows one daemon; to run several for fail-over, use PostgreSQL)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        self._fd = fd

    def try_acquire(self) -> bool:
        if self._fd is None:
            self.acquire_or_refuse()
        return True

    def confirm(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def sqlite_daemon_running(db_file: Path) -> str | None:
    """The holder's description when a daemon holds ``db_file``'s lock, else None."""
    path = lock_file_for(db_file)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown pid"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def libpq_url(sqlalchemy_url: str) -> str:
    """postgresql+psycopg://... -> postgresql://... (what psycopg.connect takes)."""
    from sqlalchemy.engine import make_url

    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(
        hide_password=False)


class PgAdvisoryLeadership:
    """Leader = holder of a session-level advisory lock on a dedicated connection."""

    kind = "postgresql-advisory-lock"

    def __init__(self, url: str, key: int = LOCK_KEY, connect_timeout_s: int = 10) -> None:
        self.url = url
        self.key = key
        self.connect_timeout_s = connect_timeout_s
        self._conn: Any = None

    def _connect(self) -> Any:
        import psycopg
        from psycopg.conninfo import make_conninfo

        conninfo = make_conninfo(
            libpq_url(self.url), connect_timeout=self.connect_timeout_s,
            application_name="gpuopt-daemon",
            **dict(kv.split("=") for kv in PG_KEEPALIVES.split()),
        )
        return psycopg.connect(conninfo, autocommit=True)

    def try_acquire(self) -> bool:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
            return bool(row and row[0])
        except Exception as err:
            log.warning("cannot reach PostgreSQL for the leadership: %s", err)
            self._drop()
            return False

    def confirm(self) -> bool:
        if self._conn is None or self._conn.closed:
            return False
        try:
            row = self._conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND pid = pg_backend_pid()"
            ).fetchone()
            return bool(row and row[0])
        except Exception as err:
            log.warning("leadership check failed (%s): stepping down", err)
            self._drop()
            return False

    def release(self) -> None:
        if self._conn is not None and not self._conn.closed:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            except Exception as err:  # closing the session releases it anyway
                log.debug("advisory unlock failed: %s", err)
        self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception as err:
                log.debug("closing the leadership connection: %s", err)
        self._conn = None


def leadership_for(url: str, dialect: str) -> Leadership:
    """The leadership for the store at ``url`` (SQLite lock file / PostgreSQL advisory lock)."""
    if dialect == "postgresql":
        return PgAdvisoryLeadership(url)
    from gpuopt.orchestrator.store.url import sqlite_file

    file = sqlite_file(url)
    if file is None:
        raise UserError(
            f"the daemon needs a database file or PostgreSQL, not {url!r}: set [database] url",
            exit_code=2,
        )
    return SqliteFileLock(file)
