"""Two reconcile loops on one store never launch the same attempt twice."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from gpuopt.jobs.executors.fault_injection import PreemptAtTimes
from gpuopt.jobs.executors.local import LocalExecutor
from tests.orchestrator.reconcile.conftest import (
    CountingExecutor,
    submit,
    train_run,
    write_job,
)

JOBS = 3


def test_two_loops_launch_each_attempt_once(db_url: str, tmp_path: Path) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, list_jobs

    setup = open_store(db_url)
    ids = []
    for i in range(JOBS):
        (tmp_path / f"j{i}").mkdir()
        ids.append(submit(setup, write_job(tmp_path / f"j{i}", f"race{i}",
                                           train_run(120, 0.03))))
    settings = load_config(None)
    launches: list[str] = []
    lock = threading.Lock()
    errors: list[object] = []
    stop = threading.Event()

    def loop() -> None:  # one "daemon": its own store handle and executor instance
        store = open_store(db_url)
        # Attempts 1 and 2 of every job are preempted 0.2 s in: re-placement races too.
        # The program runs >= 3.6 s (120 steps of 30 ms sleeps), so the executor's watcher
        # thread has seconds to carry out a preemption however loaded the machine (at 5 ms
        # steps a starved watcher could see the program finish first).
        ex = CountingExecutor(LocalExecutor(tmp_path / "attempts",
                                            preemption=PreemptAtTimes((0.2, 0.2))),
                              launches, lock)
        try:
            while not stop.is_set():
                report = reconcile_once(store, lambda kind: ex, settings)
                errors.extend(report.errors)
                if report.live == 0:
                    return
        finally:
            store.close()

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 90
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    with setup.session() as session:
        jobs = list_jobs(session)
        attempts = attempts_of(session, ids)
    setup.close()
    assert [j.status for j in jobs] == ["succeeded"] * JOBS
    per_cluster = Counter(launches)
    assert per_cluster and max(per_cluster.values()) == 1, per_cluster
    rows = [a.cluster_name for i in ids for a in attempts[i]]
    assert sorted(rows) == sorted(launches)  # one row per launch, one launch per row
    reasons = {i: [a.end_reason for a in attempts[i]] for i in ids}
    assert all(r == ["preempted", "preempted", "succeeded"] for r in reasons.values()), reasons
