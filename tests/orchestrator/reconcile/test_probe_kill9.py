"""A real kill -9, from another process, of a reconcile loop stopped at each point of a
probe (make before break, orchestrator/reconcile/probing.py), on the local executor's real
processes: a loop in its own process (probe_launcher.py) decides a probe once the job's
attempt runs its program and halts at the point; this test SIGKILLs it there; a fresh loop
in another process carries the job on. The user's program never runs twice at once (each
run logs its start and, on its SIGTERM or its end, its end, on the machine's monotonic
clock), each attempt starts it at most once, and the job converges: the held attempt
closed ``moved``, the probe's attempt ran the program to its end, the job succeeded.

test_probe_crash.py stops the loop at the same points in-process (a BaseException), on
SQLite and PostgreSQL; here nothing of the dead loop runs after the point (no ``finally``,
no flush, no rollback), on SQLite (two processes per point: ~5 s each)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from gpuopt.jobs.executors.crash_points import POINTS as CRASH_POINTS
from gpuopt.jobs.states import AttemptPhase, EndReason, JobStatus
from tests.conftest import REPO_ROOT
from tests.orchestrator.reconcile.conftest import submit, write_job
from tests.orchestrator.reconcile.probe_launcher import PAUSE_ENV, kill_9_when_paused
from tests.orchestrator.reconcile.test_move_crash import _attempts, _job

pytestmark = pytest.mark.slow

PROBE_POINTS = tuple(p for p in CRASH_POINTS if p.startswith("probe-") or p == "provisioned")
# How long the program works when nothing stops it: the held attempt's outlasts the
# probe, the kill and the fresh loop's start (it is stopped by the move); the probe's
# attempt's then ends the job soon.
HELD_S, PROBE_S = 60.0, 2.0

PROGRAM = """\
import os, signal, sys, time
log, held_s, then_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
attempt = os.environ["GPUOPT_ATTEMPT"]
seconds = held_s if attempt == "1" else then_s
def mark(what):
    with open(log, "a") as f:
        f.write(f"{what} {attempt} {os.getpid()} {time.monotonic_ns()}\\n")
def stopped(*_):
    # a second SIGTERM (a stop asked twice) may run this again inside the first; only
    # the first to create the marker logs the end (atomic), the other returns to it
    try:
        os.close(os.open(f"{log}.{os.getpid()}.end", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    mark("end")
    os._exit(128 + signal.SIGTERM)
signal.signal(signal.SIGTERM, stopped)
mark("start")
time.sleep(seconds)
mark("end")
"""


def _run(tmp: Path, runs: Path) -> str:
    prog = tmp / "program.py"
    prog.write_text(PROGRAM)
    return (f"exec {shlex.quote(sys.executable)} {shlex.quote(str(prog))} "
            f"{shlex.quote(str(runs))} {HELD_S} {PROBE_S}")


def _launcher(db_url: str, attempts: Path, job_id: str, mode: str, runs: Path,
              pause_at: str | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in (PAUSE_ENV, "GPUOPT_CRASH_AT")}
    if pause_at:
        env[PAUSE_ENV] = pause_at
    return subprocess.Popen(
        [sys.executable, "-m", "tests.orchestrator.reconcile.probe_launcher", db_url,
         str(attempts), job_id, mode, "400", str(runs)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _spans(runs: Path) -> dict[int, list[tuple[str, int]]]:
    """Per attempt, its program's marks (start / end, monotonic ns), in order."""
    out: dict[int, list[tuple[str, int]]] = {}
    for line in runs.read_text().splitlines():
        what, attempt, _pid, ns = line.split()
        out.setdefault(int(attempt), []).append((what, int(ns)))
    return out


def _never_two_at_once(runs: Path) -> None:
    spans = _spans(runs)
    intervals = []
    for attempt, marks in spans.items():
        assert [w for w, _ in marks] == ["start", "end"], (attempt, marks)  # started once
        intervals.append((marks[0][1], marks[1][1], attempt))
    intervals.sort()
    for (_s0, e0, a0), (s1, _e1, a1) in pairwise(intervals):
        assert e0 <= s1, f"attempt {a1}'s program started before attempt {a0}'s ended"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("point", PROBE_POINTS)
def test_kill_9_from_another_process_at_each_probe_point(tmp_path: Path, point: str) -> None:
    from gpuopt.orchestrator.store import open_store

    db_url = f"sqlite:///{tmp_path / 'gpuopt.db'}"  # PostgreSQL: test_probe_crash.py
    store = open_store(db_url)
    runs, attempts = tmp_path / "runs.txt", tmp_path / "attempts"
    job_id = submit(store, write_job(tmp_path, "prober", _run(tmp_path, runs)))
    first = _launcher(db_url, attempts, job_id, "probe", runs, pause_at=point)
    try:
        kill_9_when_paused(first, attempts / f"paused-{point}", point)
        second = _launcher(db_url, attempts, job_id, "keep", runs)
        out, err = second.communicate(timeout=90)
        assert second.returncode == 0, err
    finally:
        for p in (first, *([second] if "second" in locals() else [])):
            if p.poll() is None:
                p.kill()
    _never_two_at_once(runs)
    assert sorted(_spans(runs)) == [1, 2]  # each attempt ran the program, once
    job = _job(store, job_id)
    assert job.status == JobStatus.SUCCEEDED, job.last_error
    held, probe = _attempts(store, job_id)
    assert (held.status, held.end_reason) == (AttemptPhase.ENDED, EndReason.MOVED)
    assert probe.probe_of == held.number and probe.end_reason == EndReason.SUCCEEDED
    store.close()


def test_the_program_logs_its_end_once_when_stopped_twice(tmp_path: Path) -> None:
    """A stop asked twice sends SIGTERM twice; the second may run the handler again inside
    the first (CI saw attempt 3 log 'end' twice, 50 us apart, and _never_two_at_once fail
    on it): the end is logged once. The race itself is rare: without the marker this
    passed 3 of 3 times here, so this guards the handler, it does not reproduce CI's run."""
    import signal
    import time

    prog = tmp_path / "program.py"
    prog.write_text(PROGRAM)
    runs = tmp_path / "runs.txt"
    env = {**os.environ, "GPUOPT_ATTEMPT": "3"}
    p = subprocess.Popen([sys.executable, str(prog), str(runs), "120", "120"], env=env)
    try:
        deadline = time.monotonic() + 30
        while not (runs.exists() and runs.read_text().startswith("start")):
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.02)
        for _ in range(3):
            p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert [w for w, _ in _spans(runs)[3]] == ["start", "end"]
