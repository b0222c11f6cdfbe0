"""Who does the work.

SQLite: exactly one daemon per database file. An exclusive ``fcntl.flock`` on the
database file itself is taken at start, so the lock belongs to the file (its inode),
whatever name -- symlink, hard link, relative path -- a daemon opened it by; a second
daemon fails at once with exit code 2 and a message naming the holder (pid, host, read
from ``<db>.daemon.lock`` beside the file's real path). The kernel drops the lock when
the process dies, however it dies. (SQLite locks with POSIX ``fcntl`` locks, which are
independent of ``flock`` on Linux, so the two never interfere.)

PostgreSQL: any number of daemons; the leader holds a *session-level advisory lock*
(``pg_try_advisory_lock``) on a dedicated connection. The lock lives exactly as long as
that session: a leader that exits or is killed (even ``kill -9``) closes its socket, the
server releases the lock at once, and a stand-by's next try wins. No clock comparison
between hosts is involved. How quickly a leader that lost its lock stops is the runner's
business (see runner.py: it confirms the lock before every step and on a timer). TCP
keepalives and ``tcp_user_timeout`` on the lock connection bound how long a check can
hang on a vanished network (no FIN, e.g. a power cut) and make the server notice a
vanished leader host within about 25 s.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import socket
import threading
from pathlib import Path
from typing import Any, Protocol

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.store.url import libpq_url

log = logging.getLogger("gpuopt.daemon.leadership")

# One advisory lock key per database (advisory locks are scoped to the database).
LOCK_KEY = int.from_bytes(hashlib.sha256(b"gpuopt-daemon-leader").digest()[:8], "big",
                          signed=True)
PG_KEEPALIVES = ("keepalives=1 keepalives_idle=10 keepalives_interval=5 keepalives_count=3 "
                 "tcp_user_timeout=5000")


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
    """Where the holder's pid is written: beside the database file's real path."""
    real = db_file.resolve()
    return real.with_name(real.name + ".daemon.lock")


def _open_db_file(db_file: Path, flags: int) -> int:
    return os.open(db_file, flags | getattr(os, "O_CLOEXEC", 0), 0o600)


class SqliteFileLock:
    """The single-daemon lock of a SQLite database; acquired once, at start."""

    kind = "sqlite-file-lock"

    def __init__(self, db_file: Path) -> None:
        self.db_file = db_file
        self.path = lock_file_for(db_file)
        self._fd: int | None = None
        self.identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the locked file

    def acquire_or_refuse(self) -> None:
        """Lock the database file (created empty, mode 0600, if missing) or refuse."""
        fd = _open_db_file(self.db_file, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DaemonAlreadyRunning(
                f"another gpuopt daemon ({_holder(self.path)}) is already running on "
                f"{self.db_file}; stop it first (a SQLite "
                "database allows one daemon; to run several for fail-over, use PostgreSQL)"
            ) from None
        st = os.fstat(fd)
        self._fd, self.identity = fd, (st.st_dev, st.st_ino)
        self.path = lock_file_for(self.db_file)
        info = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(info, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        finally:
            os.close(info)

    def try_acquire(self) -> bool:
        if self._fd is None:
            self.acquire_or_refuse()
        return True

    def confirm(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as err:  # e.g. a read-only directory: the lock goes anyway
                log.debug("removing %s: %s", self.path, err)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _holder(info: Path) -> str:
    try:
        return info.read_text(errors="replace").strip() or "unknown pid"
    except OSError:
        return "unknown pid"


def sqlite_daemon_running(db_file: Path) -> str | None:
    """The holder's description when a daemon holds ``db_file``'s lock, else None."""
    try:
        fd = _open_db_file(db_file, os.O_RDONLY)
    except OSError:
        return None  # no database file: no daemon on it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(lock_file_for(db_file))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class PgAdvisoryLeadership:
    """Leader = holder of a session-level advisory lock on a dedicated connection."""

    kind = "postgresql-advisory-lock"

    def __init__(self, url: str, key: int = LOCK_KEY, connect_timeout_s: int = 10) -> None:
        self.url = url
        self.key = key
        self.connect_timeout_s = connect_timeout_s
        self._conn: Any = None
        self._lock = threading.Lock()  # the main loop and the workers' checks share it
        self._unreachable = False

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
        with self._lock:
            return self._try_acquire()

    def _try_acquire(self) -> bool:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
        except Exception as err:
            # Once per outage (a stand-by retries every few seconds); the rest at debug.
            level = logging.DEBUG if self._unreachable else logging.WARNING
            log.log(level, "cannot reach PostgreSQL for the leadership: %s", err)
            self._unreachable = True
            self._drop()
            return False
        if self._unreachable:
            log.info("PostgreSQL reachable again for the leadership")
            self._unreachable = False
        return bool(row and row[0])

    def confirm(self) -> bool:
        with self._lock:
            return self._confirm()

    def _confirm(self) -> bool:
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
        with self._lock:
            self._release()

    def _release(self) -> None:
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
