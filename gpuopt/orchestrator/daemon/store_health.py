"""Is the daemon's store still there and writable? (for /healthz and the leader's steps)

Two signals, both cheap:

- SQLite: the file the daemon opened (its device and inode, taken from the locked
  descriptor at start) must still be the file at the database path. A deleted file
  keeps working for the process that has it open -- every write lands in an inode
  nobody will ever read again -- and a replaced one is another database; either way the
  daemon stops doing work (nothing more would be recorded) and /healthz says why.
- Every store: the last heartbeat (a write, every lease_renew) must have succeeded; a
  read-only file system, a full disk or an unreachable PostgreSQL server fail it.

A change of state is logged once (the first problem of a kind, and the recovery), not at
every check. The daemon keeps running and keeps checking; it recovers by itself when a
write succeeds again (a server back up); a deleted or replaced SQLite file needs a
restart, which opens whatever is at the path then.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("gpuopt.daemon.store")


@dataclass(frozen=True, slots=True)
class StoreProblem:
    kind: str  # deleted | replaced | unreachable-file | write-failed
    message: str


def sqlite_file_problem(path: Path, identity: tuple[int, int]) -> StoreProblem | None:
    """A problem when ``path`` is no longer the file (device, inode) the daemon opened."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return StoreProblem("deleted", f"the database file {path} was deleted while the "
                            "daemon had it open; nothing written since is kept: restart "
                            "the daemon (it opens whatever is at the path then)")
    except OSError as err:
        return StoreProblem("unreachable-file",
                            f"the database file {path} cannot be reached: {err.strerror}")
    if (st.st_dev, st.st_ino) != identity:
        return StoreProblem("replaced", f"the database file {path} was replaced by another "
                            "file while the daemon had it open: restart the daemon to use "
                            "the new file")
    return None


class StoreHealth:
    """Thread-safe: the main loop records writes, /healthz and the steps read it."""

    def __init__(self, db_file: Path | None = None,
                 identity: tuple[int, int] | None = None) -> None:
        self.db_file = db_file
        self.identity = identity
        self._lock = threading.Lock()
        self._write_error: str | None = None
        self._reported: StoreProblem | None = None

    def wrote(self, error: str | None) -> None:
        """The outcome of the latest write to the store (None = it succeeded)."""
        with self._lock:
            self._write_error = error
        self.problem()

    def file_problem(self) -> StoreProblem | None:
        if self.db_file is None or self.identity is None:
            return None
        return sqlite_file_problem(self.db_file, self.identity)

    def problem(self) -> StoreProblem | None:
        """The store's current problem, None when healthy; logs a change of state once."""
        current = self.file_problem()
        with self._lock:
            if current is None and self._write_error is not None:
                current = StoreProblem("write-failed",
                                       f"writing to the store failed: {self._write_error}")
            before, self._reported = self._reported, current
        if current is not None and (before is None or before.kind != current.kind):
            log.error("store unhealthy: %s", current.message)
        elif current is None and before is not None:
            log.warning("store healthy again (was: %s)", before.kind)
        return current
