"""A remote submitter's ``workdir``, sent as a tar archive (gzip or not), unpacked into
a fresh directory under the data directory. Refused: a member whose path leaves the
directory (absolute, ``..``), links, devices and anything not a file or directory
(422); more than MAX_MEMBERS members or more than the size limit unpacked (413)."""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath
from typing import IO

from gpuopt.core.errors import GpuoptError

MAX_MEMBERS = 20_000


class UploadRefused(GpuoptError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or "\0" in name:
        raise UploadRefused(422, f"workdir archive: member {name[:200]!r} leaves the "
                            "workdir (absolute or ..): refused")
    return path


def unpack_workdir(archive: IO[bytes], dest: Path, limit_bytes: int) -> int:
    """Unpack ``archive`` into ``dest`` (created, empty); returns the bytes unpacked."""
    try:
        tar = tarfile.open(fileobj=archive, mode="r:*")  # noqa: SIM115 - closed by `with`
    except (tarfile.TarError, EOFError, OSError) as err:
        raise UploadRefused(422, f"workdir archive: not a tar archive ({err})") from None
    total = 0
    with tar:
        members = []
        try:
            for n, member in enumerate(tar):
                if n >= MAX_MEMBERS:
                    raise UploadRefused(413, f"workdir archive: more than {MAX_MEMBERS:,} "
                                        "members")
                _safe_name(member.name)
                if not (member.isfile() or member.isdir()):
                    raise UploadRefused(422, f"workdir archive: {member.name[:200]!r} is a "
                                        "link or special file: only files and directories "
                                        "are unpacked")
                total += max(member.size, 0)
                if total > limit_bytes:
                    raise UploadRefused(413, f"workdir archive: more than "
                                        f"{limit_bytes // 2**20:,} MiB unpacked ([api] "
                                        "max_upload_mib)")
                members.append(member)
        except (tarfile.TarError, EOFError, OSError) as err:
            raise UploadRefused(422, f"workdir archive: unreadable ({err})") from None
        dest.mkdir(parents=True, mode=0o700)
        try:
            # the "data" filter checks each member again (no escape, no special file,
            # no setuid bits) as it is written
            tar.extractall(dest, members=members, filter="data")
        except (tarfile.TarError, EOFError, OSError) as err:
            raise UploadRefused(422, f"workdir archive: unreadable ({err})") from None
    return total
