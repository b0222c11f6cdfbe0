"""A reconcile loop in its own process, for the crash-window tests:

    python -m tests.orchestrator.reconcile.launcher DB_URL ATTEMPTS_DIR JOB_ID SKEW_S STEPS

runs up to STEPS reconcile steps (clock + SKEW_S seconds) until JOB_ID is no longer live.
With GPUOPT_CRASH_AT set, the process kills itself at that point of its first launch.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def run_steps(store: Any, ex: Any, settings: Any, job_id: str, steps: int,
              skew_s: float = 0.0) -> int:
    """Up to ``steps`` reconcile steps (clock + ``skew_s`` seconds), 0.1 s apart, until
    ``job_id`` is no longer live; closes the store. The exit code: 1 (the errors on stderr)
    when a step reports errors, else 0. Shared by this launcher and probe_launcher.py."""
    import gpuopt.orchestrator.reconcile.step as reconcile
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    for _ in range(steps):
        now = datetime.now(UTC) + timedelta(seconds=skew_s)
        report = reconcile.reconcile_once(store, lambda kind: ex, settings, now)
        if report.errors:
            print(report.errors, file=sys.stderr)
            return 1
        with store.session() as session:
            job = session.get(JobRow, job_id)
        if job is None or not job.status.is_live:
            break
        time.sleep(0.1)
    store.close()
    return 0


def main(db_url: str, attempts: str, job_id: str, skew_s: str, steps: str) -> int:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    ex = LocalExecutor(Path(attempts), stop_grace_seconds=2)
    return run_steps(store, ex, load_config(None), job_id, int(steps), float(skew_s))

if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
