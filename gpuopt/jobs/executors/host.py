"""Which host (and boot of it) runs a local attempt.

A local attempt's processes can be seen, stopped and waited for only from the host that
runs them. So the host id (its hostname: give a container a fixed one) and the boot id
the kernel draws at every boot (``/proc/sys/kernel/random/boot_id``) are recorded with
the attempt: a loop on
another host never takes it for lost, and a loop on the same host after a reboot knows
its processes are gone.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True, slots=True)
class HostIdentity:
    host_id: str
    boot_id: str


def current_host(host_id: str | None = None, boot_id_file: Path = BOOT_ID_FILE
                 ) -> HostIdentity:
    """This host: ``host_id`` (default: the hostname) and the kernel's boot id ("" where
    the kernel has none, e.g. not Linux)."""
    try:
        boot = boot_id_file.read_text(encoding="ascii").strip()
    except OSError:
        boot = ""
    return HostIdentity((host_id or socket.gethostname())[:128], boot[:64])
