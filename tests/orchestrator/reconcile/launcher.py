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


def main(db_url: str, attempts: str, job_id: str, skew_s: str, steps: str) -> int:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    store = open_store(db_url)
    ex = LocalExecutor(Path(attempts), stop_grace_seconds=2)
    settings = load_config(None)
    for _ in range(int(steps)):
        now = datetime.now(UTC) + timedelta(seconds=float(skew_s))
        report = reconcile_once(store, lambda kind: ex, settings, now)
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


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
