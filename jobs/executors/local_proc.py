"""Process-group helpers for the local executor: identity checks and clean kills.

A pid alone is not an identity (pids are reused), so an attempt's leader is recorded as
(pid, create time) and every check compares both. Group members are only those
processes in the leader's group created no earlier than the leader.
"""

from __future__ import annotations

import os
import signal
import time

import psutil

# psutil's create_time() is rounded to the clock tick; allow that much slack.
_CREATE_TIME_SLACK = 0.05


def create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def leader_alive(pid: int, created: float) -> bool:
    """The recorded leader process still exists, is the same process, and is not a zombie."""
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - created) > _CREATE_TIME_SLACK:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def group_members(pgid: int, created: float) -> list[psutil.Process]:
    """Live (non-zombie) processes of group ``pgid`` started no earlier than its leader."""
    members = []
    for proc in psutil.process_iter(["pid", "create_time", "status"]):
        try:
            if os.getpgid(proc.pid) != pgid:
                continue
            if proc.info["create_time"] + _CREATE_TIME_SLACK < created:
                continue
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            members.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return members


def signal_group(pgid: int, created: float, sig: signal.Signals) -> bool:
    """Send ``sig`` to the group if any of its (identity-checked) members is alive."""
    if not group_members(pgid, created):
        return False
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def terminate_group(pgid: int, created: float, grace_seconds: float) -> None:
    """SIGTERM the group, wait up to ``grace_seconds``, then SIGKILL whatever is left."""
    if not signal_group(pgid, created, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if not group_members(pgid, created):
            return
        time.sleep(0.05)
    kill_group(pgid, created)


def kill_group(pgid: int, created: float, wait_seconds: float = 5.0) -> None:
    """SIGKILL the group and wait until none of its members is left."""
    deadline = time.monotonic() + wait_seconds
    while signal_group(pgid, created, signal.SIGKILL) and time.monotonic() < deadline:
        time.sleep(0.02)
