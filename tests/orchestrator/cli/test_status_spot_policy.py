"""`gpuopt status` says why a `spot: auto` job with a deadline holds what it holds: a job
submitted into a store, its attempts and the availability history written through the
store functions, then `status` and `status --json` read back (issue 16)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from gpuopt.core.places import Place
from gpuopt.jobs.states import AttemptPhase, EndReason, FailureKind, JobStatus
from gpuopt.orchestrator.cli import jobs_cmd
from gpuopt.orchestrator.store.jobs_tables import AttemptRow
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.providers.offer import Market
from tests.orchestrator.reconcile.conftest import submit, write_job

K = ObservationKind
IT = "g4dn.xlarge"
A = Place("aws", "us-east-1", "us-east-1a")
B = Place("aws", "us-east-1", "us-east-1b")
TIME = r"(\d{4}-\d\d-\d\d )?\d\d:\d\d UTC"  # today: 14:20 UTC; another day: with its date


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """gpuopt (test)"""

    jobs_cmd.register(app)
    return app


def _status(job_id: str, *args: str) -> str:
    res = CliRunner().invoke(_app(), ["status", job_id, *args], catch_exceptions=False,
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return res.stdout


def _job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spot: str = "auto"
         ) -> tuple[Any, str]:
    from gpuopt.orchestrator.store import open_store

    url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    monkeypatch.setenv("GPUOPT_DATABASE_URL", url)
    store = open_store(url)
    path = write_job(tmp_path, "spotty", "true")  # deadline 2h, spot unset: auto
    if spot != "auto":
        path.write_text(path.read_text().replace(
            "max_gpus_per_node: 1", f"max_gpus_per_node: 1\n  spot: {spot}"))
    return store, submit(store, path, "skypilot")


def _attempt(job_id: str, number: int, place: Place, market: Market, start: datetime,
             end: datetime | None = None, reason: EndReason | None = None,
             kind: FailureKind | None = None) -> AttemptRow:
    return AttemptRow(
        job_id=job_id, number=number, cluster_name=f"{job_id}-{number}", cloud=place.cloud,
        region=place.region, zone=place.zone, instance_type=IT, gpu="T4", gpu_count=1,
        market=market.value, price_per_hour_micros=526_000, created_at=start,
        started_at=start, ended_at=end, end_reason=reason, failure_kind=kind,
        status=AttemptPhase.ENDED if end else AttemptPhase.RUNNING)


def _write(store: Any, job_id: str, status: JobStatus, attempts: list[AttemptRow],
           seen: list[tuple[Place, Observed]]) -> None:
    from gpuopt.orchestrator.store.availability import record_observations
    from gpuopt.orchestrator.store.jobs_repo import set_job

    with store.transaction() as session:
        for a in attempts:
            session.add(a)
        set_job(session, job_id, status=status)
        record_observations(session, [(SpotPlace(p, IT, Market.SPOT), o) for p, o in seen])


def _hours_to_deadline(store: Any, job_id: str, now: datetime) -> float:
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    with store.session() as session:
        job = session.get(JobRow, job_id)
    assert job is not None and job.deadline_at is not None
    return (job.deadline_at - now) / timedelta(hours=1)


def _on_demand_hours(store: Any, tmp_path: Path) -> float:
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec

    planned = plan_spec(load_job_spec(tmp_path / "spotty.yaml"), load_config(None), store,
                        datetime.now(UTC))
    od = planned.plan.best_in(Market.ON_DEMAND)
    assert od is not None
    return od.est_hours


def test_on_demand_after_capacity_failures_is_explained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, job_id = _job(tmp_path, monkeypatch)
    switch = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    fail = FailureKind.CAPACITY
    ends = [(A, switch - timedelta(minutes=40)), (B, switch - timedelta(minutes=20))]
    attempts = [_attempt(job_id, i + 1, p, Market.SPOT, t, t, EndReason.FAILED, fail)
                for i, (p, t) in enumerate(ends)]
    attempts.append(_attempt(job_id, 3, A, Market.ON_DEMAND, switch))
    # the job's own failures, as the reconcile step records them, and another job's
    seen = [(p, Observed(t, K.CAPACITY_FAILURE)) for p, t in ends]
    seen.append((B, Observed(switch - timedelta(minutes=5), K.CAPACITY_FAILURE)))
    _write(store, job_id, JobStatus.RUNNING, attempts, seen)

    config = tmp_path / "gpuopt.toml"
    config.write_text('[placement]\nrestart_overhead = "30m"\n')
    text = _status(job_id, "--config", str(config))
    line = next(x for x in text.splitlines() if x.startswith("spot policy: "))
    assert re.fullmatch(
        rf"spot policy: on-demand since {TIME}: 3 capacity failures in aws/us-east-1a/b "
        r"in 40 min; \d+\.\d h slack left", line), line
    now = datetime.now(UTC)
    shown = json.loads(_status(job_id, "--json", "--config", str(config)))["spot_policy"]
    assert shown["holding"] == "on-demand"
    assert datetime.fromisoformat(shown["since"]) == switch
    assert shown["reason"] == "3 capacity failures in aws/us-east-1a/b in 40 min"
    assert abs(float(line.split("; ")[-1].split()[0]) - shown["slack_hours"]) <= 0.05
    # slack: to the deadline - the work on the best on-demand placement - a 0.5 h restart
    assert abs(shown["slack_hours"] - (_hours_to_deadline(store, job_id, now)
                                       - _on_demand_hours(store, tmp_path) - 0.5)) < 0.02
    assert shown["last_decision"] is None  # no "deadline policy:" note in the events
    store.close()


def test_waiting_after_a_preemption_is_explained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, job_id = _job(tmp_path, monkeypatch)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=30)
    ended = start + timedelta(minutes=20)
    attempts = [_attempt(job_id, 1, B, Market.SPOT, start, ended, EndReason.PREEMPTED)]
    seen = [(B, Observed(start, K.LAUNCH_OK)), (B, Observed(ended, K.PREEMPTED)),
            (A, Observed(ended + timedelta(minutes=2), K.CAPACITY_FAILURE))]
    _write(store, job_id, JobStatus.PREEMPTED, attempts, seen)
    with store.transaction() as session:  # the reconcile step's decision note, if any
        from gpuopt.orchestrator.store.jobs_repo import add_event

        add_event(session, job_id, ended, "waiting", "attempt 2 not placed: "
                  "deadline policy: waiting (slack to spare, spot not worth it yet); more")
    store.close()

    lines = _status(job_id).splitlines()
    i, line = next((i, x) for i, x in enumerate(lines) if x.startswith("spot policy: "))
    assert lines[i + 1] == ("  last decision: deadline policy: waiting (slack to spare, "
                            "spot not worth it yet)")
    assert re.fullmatch(
        rf"spot policy: waiting since {TIME}: preempted in aws/us-east-1b at {TIME}, then "
        rf"1 capacity failure in aws/us-east-1a; \d+\.\d h slack left, on-demand from "
        rf"{TIME} at the latest",
        line), line
    shown = json.loads(_status(job_id, "--json"))["spot_policy"]
    assert shown["holding"] == "nothing"
    assert datetime.fromisoformat(shown["since"]) == ended
    assert shown["last_decision"] == ("deadline policy: waiting (slack to spare, spot not "
                                      "worth it yet)")


def test_jobs_not_under_spot_auto_or_finished_get_no_sentence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, job_id = _job(tmp_path, monkeypatch, spot="never")
    store.close()
    assert "spot policy:" not in _status(job_id)
    assert json.loads(_status(job_id, "--json"))["spot_policy"] is None
    store, done = _job(tmp_path, monkeypatch)  # spot: auto, but finished
    now = datetime.now(UTC)
    _write(store, done, JobStatus.SUCCEEDED,
           [_attempt(done, 1, B, Market.SPOT, now - timedelta(minutes=5), now,
                     EndReason.SUCCEEDED)], [])
    store.close()
    assert json.loads(_status(done, "--json"))["spot_policy"] is None
