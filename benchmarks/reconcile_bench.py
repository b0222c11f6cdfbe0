"""Benchmark: one reconcile step over 1,000 live jobs against 10,000 offers (aim: < 1 s).

Run: /work/venvs/<name>/bin/python benchmarks/reconcile_bench.py [--jobs 1000] [--offers 10000]

A throwaway SQLite store (in a temporary GPUOPT_HOME) holds 10,000 synthetic offers
(benchmarks/plan_bench.py's, recorded through the price history) and 1,000 queued jobs
(plan_bench's job mix, stored as ``gpuopt submit`` stores them: YAML + resolved spec);
the executor is a local double that launches instantly and reports every attempt
running. Two steps are timed:

1. **place**: every job is queued, so the step plans each one on the prices of this
   moment, claims an attempt (one committed transaction per job) and launches it;
2. **watch**: every job has a running attempt, so the step asks the executor about it;
   a job under the deadline spot policy (``spot: auto`` with a deadline) is also decided
   for (keep or move: one plan and its places' availability history each).

Printed: the time of each step (wall clock, and this process's CPU time, which a busy
machine inflates less), jobs placed / watched, and how often the step loaded the offer
index and ran ``plan_job`` (counted by wrapping them).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_bench import make_jobs, make_offers


class InstantExecutor:
    """Launches nothing; every attempt it was asked for is running."""

    kind = "local"

    def __init__(self) -> None:
        self.launched: set[str] = set()

    def launch(self, spec: Any) -> Any:
        from gpuopt.jobs.executors.base import LaunchResult

        self.launched.add(spec.cluster_name)
        return LaunchResult(spec.cluster_name, adopted=False)

    def _status(self, name: str) -> Any:
        from gpuopt.jobs.executors.base import AttemptState, AttemptStatus

        state = AttemptState.RUNNING if name in self.launched else AttemptState.UNKNOWN
        return AttemptStatus(name, state)

    def poll(self, cluster_name: str) -> Any:
        return self._status(cluster_name)

    def adopt(self, cluster_name: str) -> Any:
        return self._status(cluster_name)

    def stop(self, cluster_name: str) -> Any:
        from gpuopt.jobs.executors.base import AttemptState, AttemptStatus

        self.launched.discard(cluster_name)
        return AttemptStatus(cluster_name, AttemptState.CANCELLED)

    def logs(self, cluster_name: str, follow: bool = False) -> Any:
        return iter(())


def _count_calls(module: Any, name: str, counts: dict[str, int]) -> None:
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] = counts.get(name, 0) + 1
        return real(*args, **kwargs)

    setattr(module, name, counted)


def _store_jobs(store: Any, docs: list[str], now: datetime) -> None:
    from gpuopt.core.money import to_micros
    from gpuopt.jobs.loader import parse_job_spec
    from gpuopt.jobs.resolved import resolved_json
    from gpuopt.jobs.states import JobStatus
    from gpuopt.orchestrator.store.jobs_repo import insert_job
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    with store.transaction() as session:
        for i, doc in enumerate(docs):
            text = "run: 'true'\n" + doc
            spec = parse_job_spec(text, f"job-{i}.yaml")
            insert_job(session, JobRow(
                id=f"job-{i:05d}", name=f"job-{i}", status=JobStatus.QUEUED, spec_yaml=text,
                spec_json=resolved_json(spec), spec_path=None, submitted_at=now,
                deadline_at=spec.deadline_at(now), plan_json="{}",
                budget_micros=to_micros(spec.budget) if spec.budget is not None else None,
                executor="local", updated_at=now), "queued")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--offers", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuopt-reconcile-bench-") as tmp:
        os.environ["GPUOPT_HOME"] = tmp
        os.environ.pop("GPUOPT_DATABASE_URL", None)
        run(Path(tmp), args.jobs, args.offers)


def run(tmp: Path, n_jobs: int, n_offers: int) -> None:
    import gpuopt.orchestrator.reconcile.step as reconcile_mod
    import gpuopt.policies.index as index_mod
    import gpuopt.policies.next_attempt as placement_mod
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.price_history import latest_offers, record_offers
    from gpuopt.providers.offer_filter import OfferFilter

    rng = random.Random(42)
    now = datetime.now(UTC).replace(microsecond=0)
    store = open_store(f"sqlite:///{tmp / 'gpuopt.db'}")
    with store.transaction() as session:
        record_offers(session, make_offers(n_offers, rng, now), now=now)
    with store.session() as session:
        stored = len(latest_offers(session, OfferFilter()))
    _store_jobs(store, make_jobs(n_jobs, rng), now)
    settings = load_config(None)
    executor = InstantExecutor()
    counts: dict[str, int] = {}
    _count_calls(placement_mod, "plan_job", counts)
    _count_calls(index_mod.OfferIndex, "build", counts)
    print(f"store: {stored:,} offers, {n_jobs:,} queued jobs")

    for label in ("place", "watch"):
        counts.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        report = reconcile_mod.reconcile_once(store, lambda kind: executor, settings,
                                              now + timedelta(seconds=1))
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert not report.errors, report.errors[:3]
        print(f"{label}: {dt:.2f} s ({cpu:.2f} s CPU) for {report.live:,} live jobs "
              f"({len(report.launched):,} launched, {len(report.watched):,} watched, "
              f"{len(report.waiting):,} waiting, {len(report.finished):,} finished); "
              f"offer index built {counts.get('build', 0):,}x, "
              f"plan_job run {counts.get('plan_job', 0):,}x")
    store.close()


if __name__ == "__main__":
    main()
