"""A probe (make before break, orchestrator/reconcile/probing.py) interrupted by a dead
loop at each point of its sequence, on the local executor's real processes, on SQLite
and PostgreSQL: a fresh loop carries it on, the user's program never runs twice at once
(the probe's instance runs nothing until the held attempt is stopped and closed), and
each attempt started its program at most once. A probe that finds no capacity costs
nothing, is recorded as that place having had no spot, and leaves the held attempt
running."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest

from gpuopt.jobs.executors.base import AttemptSpec, FailureKind, LaunchError, Provisioned
from gpuopt.jobs.states import AttemptPhase, EndReason, JobStatus
from tests.orchestrator.reconcile.conftest import submit, write_job
from tests.orchestrator.reconcile.test_move_crash import _attempts, _job

pytestmark = pytest.mark.slow


class Died(BaseException):
    """Stands for kill -9: nothing after it runs (not an Exception: no handler sees it)."""


# The points of the sequence, in order: the probe's row committed (provisioning not yet
# asked); the instance up, the held attempt untouched; the held attempt marked stopping;
# its stop done, its close not committed; it closed, the job not started on the probe;
# the probe's row launching, its start not made; the job started on the probe.
POINTS = ("probe-claimed", "provisioned", "probe-stopping", "probe-stopped", "probe-broken",
          "probe-starting", "probe-started")


def _program(runs: Path) -> str:
    """Appends "<attempt> <pid>" to ``runs`` when it starts, then works (the same pid)."""
    return (f"echo \"$GPUOPT_ATTEMPT $$\" >> {shlex.quote(str(runs))}; "
            f"exec {shlex.quote(sys.executable)} -c 'import time; time.sleep(120)'")


def _started(runs: Path) -> list[tuple[int, int]]:
    if not runs.exists():
        return []
    return [(int(a), int(p)) for a, p in
            (line.split() for line in runs.read_text().splitlines() if line.strip())]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _running_programs(runs: Path) -> list[int]:
    """The attempts whose program is alive now."""
    return [a for a, pid in _started(runs) if _alive(pid)]


def _wait_started(runs: Path, attempt: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(a == attempt for a, _ in _started(runs)):
            return
        time.sleep(0.05)
    raise AssertionError(f"attempt {attempt} never started its program")


def _spot_move(store: Any, job_id: str, settings: Any, real: Callable[..., Any]
               ) -> Callable[..., Any]:
    """The policy: move the held attempt to spot (a probe); place as it would otherwise."""
    from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec
    from gpuopt.policies.next_attempt import Placed
    from gpuopt.providers.offer import Market

    def decide(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("held") is None:
            return real(*args, **kwargs)
        assert kwargs.get("probe_s") is not None  # the daemon prices probes
        spec = load_stored_spec(_job(store, job_id))
        best = plan_spec(spec, settings, store, datetime.now(UTC)).plan.best_in(Market.SPOT)
        assert best is not None
        return Placed(best, None, "deadline policy: spot (test)")

    return decide


def _probing(settings: Any) -> Any:
    """``[spot] probe = true``: the local executor's placements are simulated, so it
    probes only when told to."""
    return settings.model_copy(update={"spot": settings.spot.model_copy(
        update={"probe": True})})


def _keep(real: Callable[..., Any]) -> Callable[..., Any]:
    from gpuopt.policies.next_attempt import Keep

    def decide(*args: Any, **kwargs: Any) -> Any:
        return Keep("keep (test)") if kwargs.get("held") is not None else real(*args, **kwargs)

    return decide


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_at_each_point_of_a_probe_runs_the_program_once_at_a_time(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    import gpuopt.orchestrator.reconcile.probing as probing
    import gpuopt.orchestrator.reconcile.step as reconcile
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    runs = tmp_path / "runs.txt"
    job_id = submit(store, write_job(tmp_path, "prober", _program(runs)))
    ex = LocalExecutor(tmp_path / "attempts", telemetry_interval=None, stop_grace_seconds=2)
    settings = _probing(load_config(None))
    t0 = datetime.now(UTC)

    def step(s: int) -> Any:
        report = reconcile.reconcile_once(store, lambda kind: ex, settings,
                                          t0 + timedelta(seconds=s))
        assert not report.errors, report.errors
        return report

    real = reconcile._decide
    try:
        monkeypatch.setattr(reconcile, "_decide", _keep(real))
        assert step(0).launched
        _wait_started(runs, 1)
        step(5)  # seen running

        def die_at(name: str) -> None:
            if name == point:
                raise Died

        monkeypatch.setattr(reconcile, "_decide", _spot_move(store, job_id, settings, real))
        monkeypatch.setattr(probing, "crash_point", die_at)
        with pytest.raises(Died):
            step(20)
        assert len(_running_programs(runs)) <= 1
        monkeypatch.setattr(probing, "crash_point", lambda name: None)
        monkeypatch.setattr(reconcile, "_decide", _keep(real))  # a fresh loop, no new move
        for s in (40, 60, 80):
            step(s)
            assert len(_running_programs(runs)) <= 1
        _wait_started(runs, 2)
        step(100)
        first, second = _attempts(store, job_id)
        assert (first.status, first.end_reason) == (AttemptPhase.ENDED, EndReason.MOVED)
        assert second.probe_of == 1 and second.status == AttemptPhase.RUNNING
        assert second.market == "spot"
        assert _job(store, job_id).status == JobStatus.RUNNING
        assert _running_programs(runs) == [2]  # exactly one: the probe's
        assert sorted(a for a, _ in _started(runs)) == [1, 2]  # each started once
        # the held attempt stopped before the probe's program started
        assert first.ended_at is not None and first.ended_at <= datetime.now(UTC)
    finally:
        for a in _attempts(store, job_id):
            ex.stop(a.cluster_name)
        store.close()


class NoSpot:
    """The local executor whose provisioning finds no spot capacity (SkyPilot's
    ResourcesUnavailable); it is asked under another kind, so the reconcile records the
    availability it observes (the local executor's runs are simulated and record none)."""

    kind = "sky-double"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.provisioned: list[str] = []

    def provision(self, spec: AttemptSpec) -> Provisioned:
        self.provisioned.append(spec.cluster_name)
        raise LaunchError(f"no spot capacity for {spec.placement.instance_type} in "
                          f"{spec.placement.zone or spec.placement.region}",
                          FailureKind.CAPACITY)

    def start(self, spec: AttemptSpec) -> Any:
        raise AssertionError("a failed probe never starts")

    def __getattr__(self, name: str) -> Any:
        if name == "host":
            raise AttributeError(name)  # visible from anywhere, as SkyPilot's
        return getattr(self.inner, name)


def test_a_failed_probe_costs_nothing_is_recorded_and_leaves_the_attempt_running(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuopt.orchestrator.reconcile.step as reconcile
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.observing import attempt_place
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.availability import load_observations
    from gpuopt.policies.spot.observed import ObservationKind

    store = open_store(db_url)
    runs = tmp_path / "runs.txt"
    job_id = submit(store, write_job(tmp_path, "nospot", _program(runs)), kind="sky-double")
    ex = NoSpot(LocalExecutor(tmp_path / "attempts", telemetry_interval=None,
                              stop_grace_seconds=2))
    settings = _probing(load_config(None))
    t0 = datetime.now(UTC)
    step: Callable[[int], Any] = lambda s: reconcile.reconcile_once(  # noqa: E731
        store, lambda kind: ex, settings, t0 + timedelta(seconds=s))
    real = reconcile._decide
    try:
        monkeypatch.setattr(reconcile, "_decide", _keep(real))
        assert step(0).launched
        _wait_started(runs, 1)
        step(5)
        [held] = _attempts(store, job_id)
        monkeypatch.setattr(reconcile, "_decide", _spot_move(store, job_id, settings, real))
        report = step(20)
        assert not report.errors, report.errors
        held_after, probe = _attempts(store, job_id)
        assert ex.provisioned == [probe.cluster_name]
        # the probe held nothing and costs nothing
        assert (probe.status, probe.end_reason, probe.failure_kind) == (
            AttemptPhase.ENDED, EndReason.FAILED, FailureKind.CAPACITY)
        assert probe.probe_of == 1 and probe.cost_micros == 0
        assert probe.ended_at == probe.started_at
        # the held attempt is untouched: still running its program, the job too
        assert held_after.status == AttemptPhase.RUNNING and held_after.ended_at is None
        assert held_after.started_at == held.started_at
        assert _running_programs(runs) == [1]
        job = _job(store, job_id)
        assert job.status == JobStatus.RUNNING and job.restarts_used == 0
        # spot was gone there: recorded
        place = attempt_place(probe)
        with store.session() as session:
            seen = load_observations(session, [place], t0 - timedelta(days=1))[place]
        assert [(o.at, o.kind) for o in seen if o.kind is ObservationKind.CAPACITY_FAILURE] \
            == [(probe.started_at.replace(microsecond=0), ObservationKind.CAPACITY_FAILURE)]
        monkeypatch.setattr(reconcile, "_decide", _keep(real))
        step(40)  # the attempt runs on
        assert _running_programs(runs) == [1]
        assert len(_attempts(store, job_id)) == 2
    finally:
        for a in _attempts(store, job_id):
            ex.stop(a.cluster_name)
        store.close()
