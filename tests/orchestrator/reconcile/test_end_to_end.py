"""The example training job through the reconcile loop and the local executor."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gpuopt.core.money import held_cost_micros
from gpuopt.jobs.executors.fault_injection import PreemptAtTimes, seeded_times
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.orchestrator.reconcile.attempts import checkpoint_dir, load_stored_spec
from gpuopt.orchestrator.store.ledger_repo import job_cost_micros
from tests.orchestrator.reconcile.conftest import (
    CountingExecutor,
    run_until_done,
    submit,
    train_run,
    write_job,
)

STEPS, SLEEP = 600, 0.005  # 3 s of training, a checkpoint every 20 steps
LOW, HIGH = 0.3, 0.9  # 3 preemptions of at most 0.9 s each cannot finish the 3 s run


def _run(tmp: Path, name: str, preemption: PreemptAtTimes | None):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    store = open_store(f"sqlite:///{tmp / 'gpuopt.db'}")
    launches: list[str] = []
    ex = CountingExecutor(LocalExecutor(tmp / "attempts", preemption=preemption), launches,
                          threading.Lock())
    job_id = submit(store, write_job(tmp, name, train_run(STEPS, SLEEP)))
    job = run_until_done(store, lambda kind: ex, job_id)
    with store.session() as session:
        attempts = attempts_of(session, [job_id])[job_id]
    result = json.loads(
        (Path(checkpoint_dir(job, load_stored_spec(job))) / "result.json").read_text())
    store.close()
    return job, attempts, launches, result


def test_preempted_three_times_ends_like_an_uninterrupted_run(tmp_path: Path) -> None:
    assert 3 * HIGH < STEPS * SLEEP
    ref_job, ref_attempts, _, reference = _run(tmp_path / "plain", "plain", None)
    assert ref_job.status == "succeeded" and len(ref_attempts) == 1

    times = seeded_times(seed=7, count=3, low=LOW, high=HIGH)
    job, attempts, launches, result = _run(tmp_path / "bumpy", "bumpy", PreemptAtTimes(times))

    assert job.status == "succeeded" and job.exit_code == 0
    assert result == reference  # bit-for-bit weights and loss
    assert [a.end_reason for a in attempts] == ["preempted"] * 3 + ["succeeded"]
    # One attempt row per launch, each launched exactly once, numbered 1..n.
    assert launches == [a.cluster_name for a in attempts]
    assert [a.number for a in attempts] == [1, 2, 3, 4]
    # The ledger adds up exactly: each attempt = held time x its price; job = the sum.
    for a in attempts:
        assert a.ended_at is not None and a.cost_micros is not None
        assert a.cost_micros == held_cost_micros(a.price_per_hour_micros, a.started_at,
                                                 a.ended_at)
        assert a.cost_micros > 0
        assert 0 <= (a.wasted_seconds or 0) <= (a.ended_at - a.started_at).total_seconds()
    assert job_cost_micros(attempts, job.finished_at) == sum(a.cost_micros for a in attempts)
    # The resumed attempts made progress from where the checkpoints left off.
    assert attempts[-1].progress_step == STEPS
    # Two preemptions in one place: the next attempt goes elsewhere (avoid window).
    places = [(a.cloud, a.region, a.zone or "") for a in attempts]
    for i in range(2, len(places)):
        if places[i - 2] == places[i - 1]:
            assert places[i] != places[i - 1], places
