"""Issue 26.3: a program that leaves its process group (setsid, a double fork, nohup) is
still stopped, preempted and cleaned up with its attempt: by a cgroup per attempt where
the cgroup v2 filesystem is writable, else by the supervisor (a child subreaper) and the
attempt's environment cookie. Each case runs on both paths where this machine has both;
the fallback is forced the way it happens in production: no usable cgroup directory.

Before: stop and preempt signalled one process group; `setsid python3 prog.py & wait $!`
kept running after its attempt was stopped or preempted.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpuopt.jobs.executors import local_proc
from gpuopt.jobs.executors.base import AttemptSpec, AttemptState
from gpuopt.jobs.executors.fault_injection import PreemptAtTimes
from gpuopt.jobs.executors.local import LocalExecutor
from tests.jobs.executors.harness import wait_for, wait_terminal

pytestmark = pytest.mark.slow

# Writes its pid to PIDS (one line), then works until killed; "ignore" ignores SIGTERM.
PROG = """import os, signal, sys, time
if "ignore" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "a") as fh:
    fh.write(f"{os.getpid()}\\n")
time.sleep(600)
"""


def _cgroup_parent() -> Path | None:
    parent = local_proc.own_cgroup_dir()
    return parent if parent is not None and os.access(parent, os.W_OK) else None


CGROUP = _cgroup_parent()
MODES = [
    pytest.param("cgroup", marks=pytest.mark.skipif(
        CGROUP is None, reason="no writable cgroup v2 directory on this machine")),
    "fallback",
]


def _executor(tmp: Path, mode: str, **kw: object) -> LocalExecutor:
    # the fallback: a directory that is not a cgroup, as on a host without cgroup v2
    parent = CGROUP if mode == "cgroup" else tmp / "not-a-cgroup"
    (tmp / "not-a-cgroup").mkdir(exist_ok=True)
    return LocalExecutor(tmp / "attempts", cgroup_parent=parent, stop_grace_seconds=1,
                         **kw)  # type: ignore[arg-type]


def _prog(tmp: Path) -> tuple[Path, Path]:
    script = tmp / "prog.py"
    script.write_text(PROG)
    return script, tmp / "pids.txt"


def _py(script: Path, pids: Path, *extra: str) -> str:
    return " ".join(shlex.quote(str(p)) for p in (sys.executable, script, pids, *extra))


def _pids(path: Path, n: int, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) >= n:
            return [int(x) for x in lines]
        assert time.monotonic() < deadline, f"only {lines} started"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _state(ex: LocalExecutor, spec: AttemptSpec) -> dict[str, object]:
    return json.loads((ex.workspace(spec.cluster_name) / "state.json").read_text())


def _spec(tmp: Path, run: str, attempt: int = 1) -> AttemptSpec:
    return AttemptSpec(job_id="contain", attempt=attempt, run=run,
                       checkpoint_dir=str(tmp / "ck"))


@pytest.mark.parametrize("mode", MODES)
def test_stop_reaches_a_setsid_program(tmp_path: Path, mode: str) -> None:
    script, pids = _prog(tmp_path)
    ex = _executor(tmp_path, mode)
    spec = _spec(tmp_path, f"setsid {_py(script, pids)} & wait $!")
    ex.launch(spec)
    (pid,) = _pids(pids, 1)
    state = _state(ex, spec)
    assert (state["cgroup"] is not None) == (mode == "cgroup")
    assert os.getsid(pid) == pid  # it did leave the attempt's session and group
    status = ex.stop(spec.cluster_name)
    assert status.state is AttemptState.CANCELLED
    assert not _alive(pid), "the setsid program outlived stop"
    if mode == "cgroup":
        assert not Path(str(state["cgroup"])).exists()  # removed once empty


@pytest.mark.parametrize("mode", MODES)
def test_preemption_kills_a_setsid_program(tmp_path: Path, mode: str) -> None:
    script, pids = _prog(tmp_path)
    ex = _executor(tmp_path, mode, preemption=PreemptAtTimes((1.0,)))
    spec = _spec(tmp_path, f"setsid {_py(script, pids)} & wait $!")
    ex.launch(spec)
    (pid,) = _pids(pids, 1)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.PREEMPTED
    assert not _alive(pid), "the preempted attempt's setsid program runs on"
    ex.stop(spec.cluster_name)


@pytest.mark.parametrize("mode", MODES)
def test_double_fork_nohup_and_sigterm_ignoring_programs_are_all_stopped(
        tmp_path: Path, mode: str) -> None:
    script, pids = _prog(tmp_path)
    run = "\n".join([
        # a classic daemon: fork, setsid, fork again, the middle one exits
        f"( setsid sh -c '{_py(script, pids)} & exit 0' & ) ; ",
        f"nohup {_py(script, pids)} >/dev/null 2>&1 &",
        f"setsid {_py(script, pids, 'ignore')} &",
        "sleep 600",
    ])
    ex = _executor(tmp_path, mode)
    spec = _spec(tmp_path, run)
    ex.launch(spec)
    started = _pids(pids, 3)
    ex.stop(spec.cluster_name)
    assert [p for p in started if _alive(p)] == []


@pytest.mark.parametrize("mode", MODES)
def test_a_supervisor_killed_from_outside_leaves_nothing_running(
        tmp_path: Path, mode: str) -> None:
    script, pids = _prog(tmp_path)
    ex = _executor(tmp_path, mode)
    spec = _spec(tmp_path, f"setsid {_py(script, pids)} & wait $!")
    ex.launch(spec)
    (pid,) = _pids(pids, 1)
    os.kill(int(_state(ex, spec)["pid"]), signal.SIGKILL)  # its orphans go to init
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.UNKNOWN  # lost, and what it started is stopped
    assert not _alive(pid)
    ex.stop(spec.cluster_name)


@pytest.mark.parametrize("mode", MODES)
def test_leftovers_of_a_finished_program_are_removed(tmp_path: Path, mode: str) -> None:
    script, pids = _prog(tmp_path)
    ex = _executor(tmp_path, mode)
    spec = _spec(tmp_path, f"setsid {_py(script, pids)} &\nsleep 0.5; exit 0")
    ex.launch(spec)
    (pid,) = _pids(pids, 1)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED
    # the supervisor ends what the program left (SIGTERM, then SIGKILL), then itself
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_no_cgroup_directory_falls_back_to_the_subreaper(tmp_path: Path) -> None:
    """A cgroup parent that is not a cgroup (or is missing) gives no cgroup, silently:
    the attempt still runs, contained by the supervisor and the cookie."""
    plain = tmp_path / "plain"
    plain.mkdir()
    assert local_proc.make_cgroup(plain, "x", os.getpid()) is None
    assert list(plain.iterdir()) == []  # nothing left behind
    assert local_proc.make_cgroup(tmp_path / "missing", "x", os.getpid()) is None
    assert local_proc.make_cgroup(None, "x", os.getpid()) is None


def test_own_cgroup_dir_reads_proc(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    cg = tmp_path / "cg"
    (cg / "system.slice" / "gpuopt.service").mkdir(parents=True)
    (cg / "system.slice" / "gpuopt.service" / "cgroup.procs").write_text("")
    (proc / "self" / "cgroup").write_text("0::/system.slice/gpuopt.service\n")
    (proc / "self" / "mountinfo").write_text(
        f"30 23 0:26 / {cg} rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n")
    assert local_proc.own_cgroup_dir(proc) == cg / "system.slice" / "gpuopt.service"
    (proc / "self" / "cgroup").write_text("1:name=systemd:/\n")  # v1 only: none
    assert local_proc.own_cgroup_dir(proc) is None


@pytest.mark.parametrize("mode", MODES)
def test_attempt_log_is_private(tmp_path: Path, mode: str) -> None:
    ex = _executor(tmp_path, mode)
    spec = _spec(tmp_path, "echo hello")
    ex.launch(spec)
    wait_for(ex, spec.cluster_name, lambda s: s.state.is_terminal)
    log = ex.workspace(spec.cluster_name) / "attempt.log"
    assert log.stat().st_mode & 0o777 == 0o600
    assert "hello" in log.read_text()
