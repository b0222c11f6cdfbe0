"""Process-group helpers for the local executor: identity checks and clean kills.

A pid alone is not an identity (pids are reused), so an attempt's leader is recorded as
(pid, create time) and every check compares both. Group members are only those
processes in the leader's group created no earlier than the leader.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

log = logging.getLogger(__name__)

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


# -- containment: every process an attempt starts, not only its first group ------------
#
# A program may leave its process group (``setsid``, a double fork, ``nohup ... &``):
# signalling the group then misses it, and it runs on beside the next attempt. So an
# attempt's processes are also contained by one of, strongest first:
#
# - a cgroup v2 per attempt, a child of this process's own cgroup (where the cgroup
#   filesystem is mounted and writable: root, or a systemd unit with ``Delegate=yes``):
#   nothing in it can leave it without privileges, and ``cgroup.kill`` kills it whole;
# - else the supervisor (SUPERVISOR below), the attempt's leader process: a child
#   subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every orphaned descendant,
#   ``setsid`` or double-forked, is re-parented to it and stays in its process tree; it
#   kills what is left when the program ends;
# - always, a cookie: ``GPUOPT_ATTEMPT_COOKIE=<random>`` in the attempt's environment,
#   which every descendant inherits (the way Jenkins' ProcessTreeKiller finds what a
#   build left behind): it finds the processes even after the supervisor itself was
#   killed from outside, when its orphans went to init.
#
# ``members`` is the union of what the cgroup, the supervisor's tree, the cookie and the
# process group find; ``stop_all`` / ``kill_all`` wait until that union is empty.

COOKIE_ENV = "GPUOPT_ATTEMPT_COOKIE"
CGROUP2_MAGIC_FILES = ("cgroup.procs", "cgroup.events")


@dataclass(frozen=True, slots=True)
class Contained:
    """An attempt's processes as recorded in its state.json: the leader (pid and create
    time, = its process group), its cgroup directory (None: not available here) and the
    cookie its environment carries."""

    pid: int
    create_time: float
    cgroup: str | None = None
    cookie: str | None = None

    def to_state(self) -> dict[str, Any]:
        return {"pid": self.pid, "pgid": self.pid, "create_time": self.create_time,
                "cgroup": self.cgroup, "cookie": self.cookie}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Contained:
        return cls(pid=int(state["pid"]), create_time=float(state["create_time"]),
                   cgroup=state.get("cgroup"), cookie=state.get("cookie"))

    @property
    def kind(self) -> str:
        return "cgroup" if self.cgroup else "subreaper"


def own_cgroup_dir(proc_root: Path = Path("/proc")) -> Path | None:
    """This process's cgroup v2 directory (``0::<path>`` in /proc/self/cgroup, under the
    cgroup2 mount of /proc/self/mountinfo), or None where there is none."""
    try:
        lines = (proc_root / "self" / "cgroup").read_text().splitlines()
        mounts = (proc_root / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    rel = next((line[3:] for line in lines if line.startswith("0::")), None)
    if rel is None:
        return None
    for line in mounts:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or not right.startswith("cgroup2 ") or len(fields) < 5:
            continue
        root, mount_point = fields[3], fields[4]
        inner = rel if root == "/" else rel[len(root):] if rel.startswith(root) else None
        if inner is None:
            continue
        path = Path(mount_point) / inner.lstrip("/")
        if (path / "cgroup.procs").exists():
            return path
    return None


def _is_cgroup(path: Path) -> bool:
    """The kernel fills a new cgroup directory with its interface files; a plain
    directory stays empty."""
    return all((path / name).exists() for name in CGROUP2_MAGIC_FILES)


def make_cgroup(parent: Path | None, name: str, pid: int) -> str | None:
    """Create ``<parent>/<name>`` and move ``pid`` (held at its gate: it has started
    nothing yet) into it; None when the cgroup filesystem is not available or not
    writable here (the subreaper and the cookie then contain the attempt)."""
    if parent is None:
        return None
    path = parent / name
    try:
        path.mkdir()
    except OSError as err:
        log.debug("no cgroup for %s under %s: %s", name, parent, err)
        return None
    try:
        if not _is_cgroup(path):
            raise OSError(f"{parent} is not a cgroup v2 directory")
        (path / "cgroup.procs").write_text(f"{pid}\n")
    except OSError as err:
        log.debug("no cgroup for %s under %s: %s", name, parent, err)
        _rmdir_tree(path)
        return None
    return str(path)


def _cgroup_pids(path: str) -> set[int]:
    pids: set[int] = set()
    for root, _dirs, _files in os.walk(path):
        try:
            text = (Path(root) / "cgroup.procs").read_text()
        except OSError:
            continue
        pids.update(int(p) for p in text.split() if p.isdigit())
    return pids


def _rmdir_tree(path: Path) -> bool:
    """Remove a cgroup directory and its child cgroups, deepest first (an empty cgroup's
    interface files go with its rmdir); True when it is gone."""
    if not path.exists():
        return True
    for root, dirs, _files in os.walk(path, topdown=False):
        for d in dirs:
            with contextlib.suppress(OSError):
                (Path(root) / d).rmdir()
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError as err:
        if err.errno not in (errno.EBUSY, errno.ENOTEMPTY):
            log.debug("removing %s: %s", path, err)
        return False
    return True


def _has_cookie(proc: psutil.Process, cookie: str) -> bool:
    try:
        return proc.environ().get(COOKIE_ENV) == cookie
    except (psutil.Error, OSError):
        return False


def members(c: Contained) -> list[psutil.Process]:
    """Every live (non-zombie) process of the attempt: its cgroup's, the leader's tree,
    the processes carrying its cookie, and its process group's."""
    found: dict[int, psutil.Process] = {}
    if c.cgroup:
        for pid in _cgroup_pids(c.cgroup):
            with contextlib.suppress(psutil.Error):
                found[pid] = psutil.Process(pid)
    if leader_alive(c.pid, c.create_time):
        with contextlib.suppress(psutil.Error):
            leader = psutil.Process(c.pid)
            found[leader.pid] = leader
            for child in leader.children(recursive=True):
                found[child.pid] = child
    for proc in psutil.process_iter(["pid", "create_time", "status"]):
        if proc.pid in found or proc.pid == os.getpid():
            continue
        try:
            if proc.info["create_time"] + _CREATE_TIME_SLACK < c.create_time:
                continue  # older than the attempt: never one of its processes
            if os.getpgid(proc.pid) == c.pid or (c.cookie and _has_cookie(proc, c.cookie)):
                found[proc.pid] = proc
        except (ProcessLookupError, psutil.Error):
            continue
    alive = []
    for proc in found.values():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


def _signal_members(c: Contained, sig: signal.Signals) -> int:
    procs = members(c)
    if sig == signal.SIGKILL and c.cgroup and procs:
        with contextlib.suppress(OSError):  # cgroup.kill (Linux 5.14): the whole tree at once
            (Path(c.cgroup) / "cgroup.kill").write_text("1\n")
    for proc in procs:
        with contextlib.suppress(psutil.Error, OSError):
            proc.send_signal(sig)
    return len(procs)


def stop_all(c: Contained, grace_seconds: float) -> None:
    """SIGTERM every process of the attempt, wait up to ``grace_seconds``, then SIGKILL
    what is left (a program that ignores SIGTERM) and wait until none is left."""
    if _signal_members(c, signal.SIGTERM):
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline and members(c):
            time.sleep(0.05)
    kill_all(c)


def kill_all(c: Contained, wait_seconds: float = 5.0) -> None:
    """SIGKILL every process of the attempt until none is left; RuntimeError if some
    survive ``wait_seconds`` (then the attempt is not reported over)."""
    deadline = time.monotonic() + wait_seconds
    while _signal_members(c, signal.SIGKILL):
        if time.monotonic() > deadline:
            left = ", ".join(str(p.pid) for p in members(c)) or "none"
            raise RuntimeError(f"processes of attempt leader {c.pid} survived SIGKILL: {left}")
        time.sleep(0.02)


def release(c: Contained) -> None:
    """Remove the attempt's cgroup once it is empty (idempotent)."""
    if c.cgroup and not _cgroup_pids(c.cgroup):
        _rmdir_tree(Path(c.cgroup))


def spawn(argv: list[str], *, cwd: Path, env: Mapping[str, str], log_path: Path,
          cgroup_parent: Path | None, name: str) -> tuple[subprocess.Popen[bytes], Contained]:
    """Start ``argv`` contained: in a session of its own (process group = its pid), with
    the attempt's cookie in its environment, stdout and stderr appended to ``log_path``
    (created 0600: a program may print what it should not), and moved into a cgroup
    ``<cgroup_parent>/<name>`` where that is possible. ``argv`` must start nothing until
    the caller lets it (the local executor's gate waits for the workspace lock), so that
    it is in its cgroup before it forks."""
    cookie = secrets.token_hex(12)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # also a log left by an older release
        proc = subprocess.Popen(
            argv, cwd=cwd, env={**env, COOKIE_ENV: cookie}, stdin=subprocess.DEVNULL,
            stdout=fd, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        os.close(fd)
    created = create_time(proc.pid) or time.time()
    cgroup = make_cgroup(cgroup_parent, f"{name}.{cookie[:8]}", proc.pid)
    return proc, Contained(pid=proc.pid, create_time=created, cgroup=cgroup, cookie=cookie)


# The attempt's leader, started by the gate (``os.execv``: same pid, same cgroup):
#   python -I supervisor.py NAMES_FILE -- bash wrapper.sh
# It becomes a child subreaper, runs the wrapper as its child with the output going to
# its own stdout (the attempt's log) -- through a filter that replaces the values of the
# variables named in NAMES_FILE (the job's secrets) by *** -- and exits with the
# wrapper's code once no descendant is left: when the wrapper ends, what it left behind
# gets SIGTERM, then SIGKILL after LEFTOVER_GRACE. SIGTERM/SIGINT/SIGHUP to the
# supervisor itself do the same at once (it stays until its tree is gone).
SUPERVISOR = r'''import ctypes, json, os, signal, subprocess, sys, threading, time
LEFTOVER_GRACE = 3.0
stopping = []


def descendants():
    me, kids = os.getpid(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields and fields[0] != "Z":
            kids.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], list(kids.get(me, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def signal_all(sig):
    for pid in descendants():
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def on_signal(signum, frame):
    if not stopping:
        stopping.append(time.monotonic())
    signal_all(signal.SIGTERM)


def relay(fd, values):
    held = b""
    longest = max(len(v) for v in values)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        data = held + chunk
        for v in values:
            data = data.replace(v, b"***")
        keep = 0
        if chunk:  # hold back a tail that may be the start of a value
            for n in range(min(longest - 1, len(data)), 0, -1):
                tail = data[-n:]
                if any(v.startswith(tail) for v in values):
                    keep = n
                    break
        out, held = (data[:len(data) - keep], data[len(data) - keep:]) if keep else (data, b"")
        while out:
            try:
                out = out[os.write(1, out):]
            except InterruptedError:
                continue
            except OSError:
                out = b""
        if not chunk:
            return


def main():
    names_file, argv = sys.argv[1], sys.argv[3:]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
    names = []
    if names_file:
        try:
            with open(names_file, encoding="utf-8") as fh:
                names = json.load(fh)
        except (OSError, ValueError):
            names = []
    values = sorted({os.environ[n].encode() for n in names
                     if len(os.environ.get(n, "")) >= 4}, key=len, reverse=True)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    out = None
    reader = None
    if values:
        r, w = os.pipe()
        reader = threading.Thread(target=relay, args=(r, values), daemon=True)
        reader.start()
        out = w
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    if out is not None:
        os.close(out)
    code, ended = None, None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == child.pid:
            code = os.waitstatus_to_exitcode(status)
            ended = time.monotonic()
            signal_all(signal.SIGTERM)
        if pid:
            continue
        start = ended if ended is not None else (stopping[0] if stopping else None)
        if start is not None and time.monotonic() - start > LEFTOVER_GRACE:
            signal_all(signal.SIGKILL)
        time.sleep(0.05)
    if reader is not None:
        reader.join(5)
    if code is None:
        code = 1
    sys.exit(code if code >= 0 else 128 - code)


main()
'''
