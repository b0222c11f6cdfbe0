"""The reconcile step records what it really observes of spot (orchestrator.reconcile.observing):
launch_ok, capacity_failure, preempted, released, at the attempt's place; on-demand,
quota failures and local (simulated) runs record nothing; a recording that fails never
stops the step."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpuopt.core.places import Place
from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    AttemptStatus,
    LaunchError,
    LaunchResult,
)
from gpuopt.jobs.states import EndReason, FailureKind, JobStatus
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.policies.spot.observed import ObservationKind, SpotPlace, fold_place
from gpuopt.providers.offer import Market
from tests.orchestrator.reconcile.conftest import submit, write_job

K = ObservationKind
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@dataclass
class Scripted:
    """An executor double (kind ``skypilot`` unless told): each launch raises the next
    scripted error (None: it starts); adopt answers the scripted state."""

    launch_errors: list[LaunchError | None] = field(default_factory=list)
    state: AttemptState = AttemptState.RUNNING
    failure: FailureKind | None = None
    kind: str = "skypilot"
    launched: list[str] = field(default_factory=list)

    def launch(self, spec: AttemptSpec) -> LaunchResult:
        self.launched.append(spec.cluster_name)
        err = self.launch_errors.pop(0) if self.launch_errors else None
        if err is not None:
            raise err
        return LaunchResult(spec.cluster_name, adopted=False)

    def adopt(self, name: str) -> AttemptStatus:
        return AttemptStatus(name, self.state, failure=self.failure,
                             exit_code=0 if self.state is AttemptState.SUCCEEDED else None)

    def stop(self, name: str) -> AttemptStatus:
        return AttemptStatus(name, AttemptState.CANCELLED)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"not expected: {name}")


def _job_file(tmp_path: Path, name: str, spot: str, restarts: int = 2) -> Path:
    path = write_job(tmp_path, name, "true", restarts=restarts)
    text = path.read_text().replace("max_gpus_per_node: 1",
                                    f"max_gpus_per_node: 1\n  spot: {spot}")
    path.write_text(text.replace(f"dir: {tmp_path / 'ckpt'}", "dir: s3://team-bucket/run"))
    return path


def _step(store: Any, ex: Any, at: datetime) -> Any:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once

    report = reconcile_once(store, lambda kind: ex, load_config(None), at)
    assert not report.errors, report.errors
    return report


def _attempts(store: Any, job_id: str) -> list[AttemptRow]:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    with store.session() as session:
        return attempts_of(session, [job_id])[job_id]


def _place(a: AttemptRow) -> SpotPlace:
    return SpotPlace(Place(a.cloud, a.region, a.zone), a.instance_type, Market.SPOT)


def _stored(store: Any) -> dict[SpotPlace, list[tuple[datetime, ObservationKind]]]:
    from gpuopt.orchestrator.store.availability import load_observations, observed_places

    with store.session() as session:
        places = observed_places(session)
        got = load_observations(session, places, T0 - timedelta(days=1))
    return {p: [(o.at, o.kind) for o in obs] for p, obs in got.items() if obs}


def _fold(store: Any, place: SpotPlace, now: datetime,
          but: tuple[datetime, ObservationKind] | None = None) -> list[bool | None]:
    from gpuopt.orchestrator.store.availability import load_observations

    with store.session() as session:
        obs = [o for o in load_observations(session, [place], T0)[place]
               if (o.at, o.kind) != but]
    return list(fold_place(obs, T0, now, 60.0))


def _run(db_url: str, tmp_path: Path, ex: Scripted, spot: str = "always",
         kind: str = "skypilot") -> tuple[Any, str]:
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    return store, submit(store, _job_file(tmp_path, "obs", spot), kind)


@pytest.mark.parametrize("end", [AttemptState.PREEMPTED, AttemptState.SUCCEEDED,
                                 AttemptState.FAILED, AttemptState.CANCELLED])
def test_a_spot_attempt_records_its_launch_and_its_end(db_url: str, tmp_path: Path,
                                                       end: AttemptState) -> None:
    ex = Scripted()
    store, job_id = _run(db_url, tmp_path, ex)
    _step(store, ex, T0)  # launched
    [a] = _attempts(store, job_id)
    assert a.market == "spot" and ex.launched == [a.cluster_name]
    place = _place(a)
    assert _stored(store) == {place: [(T0, K.LAUNCH_OK)]}
    _step(store, ex, T0 + timedelta(minutes=2))  # running
    ex.state = end
    ex.failure = FailureKind.PROGRAM if end is AttemptState.FAILED else None
    ended = T0 + timedelta(minutes=5)
    _step(store, ex, ended)
    a = next(x for x in _attempts(store, job_id) if x.number == 1)
    assert a.ended_at is not None
    want = K.PREEMPTED if end is AttemptState.PREEMPTED else K.RELEASED
    stored = _stored(store)[place]
    # A job placed again in the same step may relaunch there: the second launch_ok.
    # Stored to the second, the end loads before a relaunch in the same second.
    relaunched = stored == [(T0, K.LAUNCH_OK), (ended, want), (ended, K.LAUNCH_OK)]
    assert relaunched or stored == [(T0, K.LAUNCH_OK), (ended, want)]
    # Attempt 1's own observations fold to: held (True) from its launch; the tick of a
    # preemption is False, of a release True.
    assert _fold(store, place, ended, but=(ended, K.LAUNCH_OK)) == [True] * 5 + [
        want is K.RELEASED]
    # With the relaunch, its tick ends held: the new hold is up.
    assert _fold(store, place, ended)[-1] is (True if relaunched else want is K.RELEASED)
    store.close()


def test_a_capacity_failure_is_recorded_and_a_quota_failure_is_not(db_url: str,
                                                                   tmp_path: Path) -> None:
    ex = Scripted(launch_errors=[
        LaunchError("InsufficientInstanceCapacity", FailureKind.CAPACITY),
        LaunchError("VcpuLimitExceeded: quota", FailureKind.REFUSED),
    ])
    store, job_id = _run(db_url, tmp_path, ex)
    _step(store, ex, T0)
    [a] = _attempts(store, job_id)
    assert (a.end_reason, a.failure_kind) == (EndReason.FAILED, FailureKind.CAPACITY)
    place = _place(a)
    assert _stored(store) == {place: [(T0, K.CAPACITY_FAILURE)]}
    assert _fold(store, place, T0) == [False]
    _step(store, ex, T0 + timedelta(minutes=5))  # after the back-off: quota, fails the job
    attempts = _attempts(store, job_id)
    assert len(attempts) == 2 and attempts[1].failure_kind == FailureKind.REFUSED
    with store.session() as session:
        assert session.get(JobRow, job_id).status == JobStatus.FAILED  # type: ignore[union-attr]
    assert _stored(store) == {place: [(T0, K.CAPACITY_FAILURE)]}  # nothing more
    store.close()


def test_on_demand_attempts_record_nothing(db_url: str, tmp_path: Path) -> None:
    ex = Scripted(launch_errors=[None, LaunchError("no capacity", FailureKind.CAPACITY)])
    store, job_id = _run(db_url, tmp_path, ex, spot="never")
    _step(store, ex, T0)
    ex.state = AttemptState.PREEMPTED
    _step(store, ex, T0 + timedelta(minutes=5))
    _step(store, ex, T0 + timedelta(minutes=6))
    attempts = _attempts(store, job_id)
    assert [(a.end_reason, a.failure_kind) for a in attempts] == [
        (EndReason.PREEMPTED, None), (EndReason.FAILED, FailureKind.CAPACITY), (None, None)]
    assert {a.market for a in attempts} == {"on-demand"}
    assert _stored(store) == {}
    store.close()


def test_local_runs_are_simulated_and_record_nothing(db_url: str, tmp_path: Path) -> None:
    ex = Scripted(kind="local")
    store, job_id = _run(db_url, tmp_path, ex, kind="local")
    _step(store, ex, T0)
    ex.state = AttemptState.PREEMPTED
    _step(store, ex, T0 + timedelta(minutes=5))
    [a, *_] = _attempts(store, job_id)
    assert a.market == "spot" and a.end_reason == EndReason.PREEMPTED
    assert _stored(store) == {}
    store.close()


def test_a_recording_failure_never_stops_the_step(db_url: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    import gpuopt.orchestrator.store.availability as availability

    def broken(session: Any, observations: Any) -> int:
        # A real database error: on PostgreSQL it aborts the transaction it runs in
        # unless only its savepoint is rolled back.
        from sqlalchemy import text

        session.connection().execute(text("SELECT * FROM no_such_history"))
        raise AssertionError("unreachable")

    monkeypatch.setattr(availability, "record_observations", broken)
    ex = Scripted()
    store, job_id = _run(db_url, tmp_path, ex)
    with caplog.at_level(logging.WARNING, logger="gpuopt.availability"):
        report = _step(store, ex, T0)
        assert len(report.launched) == 1
        ex.state = AttemptState.PREEMPTED
        _step(store, ex, T0 + timedelta(minutes=5))
    [a, *_] = _attempts(store, job_id)
    assert a.end_reason == EndReason.PREEMPTED  # the close was kept
    with store.session() as session:
        job = session.get(JobRow, job_id)
    assert job is not None and job.status in (JobStatus.PREEMPTED, JobStatus.LAUNCHING)
    failures = [r for r in caplog.records if "not recorded" in r.getMessage()]
    assert [r.getMessage().split(": ")[1] for r in failures][:2] == [
        "launch_ok not recorded in the availability history",
        "preempted not recorded in the availability history"]
    assert _stored(store) == {}
    store.close()


def test_a_preempted_attempt_and_its_successor_are_both_recorded(db_url: str,
                                                                 tmp_path: Path) -> None:
    """Two spot attempts, the first preempted: the fold reads the hold, the preemption,
    then the second hold."""
    ex = Scripted()
    store, job_id = _run(db_url, tmp_path, ex)
    _step(store, ex, T0)
    ex.state = AttemptState.PREEMPTED
    _step(store, ex, T0 + timedelta(minutes=3))  # closes 1, places and launches 2
    attempts = _attempts(store, job_id)
    assert [a.end_reason for a in attempts] == [EndReason.PREEMPTED, None]
    stored = _stored(store)
    got = sorted((at, kind, str(p)) for p, rows in stored.items() for at, kind in rows)
    t3 = T0 + timedelta(minutes=3)
    assert [(at, kind) for at, kind, _ in got] == [
        (T0, K.LAUNCH_OK), (t3, K.LAUNCH_OK), (t3, K.PREEMPTED)]
    assert got[0][2] == got[2][2] == str(_place(attempts[0]))
    assert got[1][2] == str(_place(attempts[1]))
    store.close()
