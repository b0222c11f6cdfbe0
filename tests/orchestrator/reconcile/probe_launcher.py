"""A reconcile loop in its own process that probes, for the kill -9 tests of a probe:

    python -m tests.orchestrator.reconcile.probe_launcher DB_URL ATTEMPTS_DIR JOB_ID MODE STEPS RUNS

runs up to STEPS reconcile steps on the real clock with ``[spot] probe = true`` until
JOB_ID is no longer live. MODE ``probe``: the spot policy moves the job's held attempt
to spot (a probe, make before break) at the first step that finds it running its program
(RUNS, the program's log, has ``start <attempt> ...``), and places as usual otherwise; ``keep``: it
never moves a held attempt (a fresh loop carrying on whatever it finds).

With GPUOPT_TEST_PAUSE_AT=<probe point> (jobs/executors/crash_points.py), the loop stops
at that point of the probe: it writes ``<ATTEMPTS_DIR>/paused-<point>`` and waits there to
be killed by another process (the test's kill -9).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PAUSE_ENV = "GPUOPT_TEST_PAUSE_AT"


def kill_9_when_paused(proc: subprocess.Popen[str], marker: Path, what: str) -> None:
    """Wait until `proc` writes `marker` (it has reached its pause point: `_pause_at`), then
    SIGKILL it from this process, as kill -9 would, and check it died of that."""
    end = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"the process never reached {what}"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def _pause_at(point: str, attempts: Path) -> Any:
    def reached(name: str) -> None:
        if name != point:
            return
        (attempts / f"paused-{name}").write_text(str(os.getpid()))
        while True:  # until the kill -9
            time.sleep(1)

    return reached


def _probe_once_running(store: Any, job_id: str, settings: Any, runs: Path,
                        real: Any) -> Any:
    from tests.orchestrator.reconcile.test_probe_crash import _keep, _spot_move

    move, keep = _spot_move(store, job_id, settings, real), _keep(real)
    moved: list[bool] = []

    def decide(*args: Any, **kwargs: Any) -> Any:
        held = kwargs.get("held")
        if held is None:
            return real(*args, **kwargs)
        if moved or not _started(runs, held.number):
            return keep(*args, **kwargs)
        moved.append(True)
        return move(*args, **kwargs)

    return decide


def _started(runs: Path, attempt: int) -> bool:
    """Has the attempt's program logged its start (``start <attempt> <pid> <ns>``)?"""
    lines = runs.read_text().splitlines() if runs.exists() else []
    return any(line.split()[:2] == ["start", str(attempt)] for line in lines)


def main(db_url: str, attempts: str, job_id: str, mode: str, steps: str, runs: str) -> int:
    import gpuopt.orchestrator.reconcile.probing as probing
    import gpuopt.orchestrator.reconcile.step as reconcile
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store
    from tests.orchestrator.reconcile.launcher import run_steps
    from tests.orchestrator.reconcile.test_probe_crash import _keep, _probing

    store = open_store(db_url)
    ex = LocalExecutor(Path(attempts), telemetry_interval=None, stop_grace_seconds=2)
    settings = _probing(load_config(None))
    real = reconcile._decide
    reconcile._decide = (_probe_once_running(store, job_id, settings, Path(runs), real)
                         if mode == "probe" else _keep(real))
    if point := os.environ.get(PAUSE_ENV):
        probing.crash_point = _pause_at(point, Path(attempts))
    return run_steps(store, ex, settings, job_id, int(steps))


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
