"""Reading a user-named file without trusting it: regular files only, at most N bytes.

``/dev/zero``, a FIFO (would block on open), a directory or a multi-gigabyte file named
as a job file or a model config become a clear error instead of a hang or an
out-of-memory kill.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuopt.core.errors import GpuoptError


class UnreadableFile(GpuoptError, ValueError):
    """The file is not one gpuopt will read; the message says why (path included)."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); OSError if it cannot be
    opened, UnreadableFile if it is not a regular file or is larger than ``limit``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "is a directory", str(path))
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"{path}: not a regular file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(f"{path}: larger than {limit:,} bytes")
    return data
