"""A probe failing over (``[spot] probes_per_step``, orchestrator/reconcile/step.py
``_reconsider``) interrupted by a dead loop, on the local executor's real processes, on
SQLite and PostgreSQL. The job holds an on-demand attempt; the policy probes zone A,
whose provisioning is refused for capacity, then, told so in the same step, zone B. The
loop dies (a BaseException at a crash point, as test_probe_crash.py) at each point of
B's sequence, between A's close and B's claim (the re-decision), or at A's claim; a
fresh loop carries on. The program never runs twice at once (each run logs its start
and, on its SIGTERM, its end, on the machine's monotonic clock), each attempt starts it
at most once, A's probe is closed failed, costs nothing and is recorded as no spot
there, and exactly one probe, B's, ends up carrying the job."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, FailureKind, LaunchError, Provisioned
from gpuopt.jobs.states import AttemptPhase, EndReason, JobStatus
from tests.orchestrator.reconcile.conftest import submit, write_job
from tests.orchestrator.reconcile.test_move_crash import _attempts, _job
from tests.orchestrator.reconcile.test_probe_crash import Died, _alive, _probing
from tests.orchestrator.reconcile.test_probe_kill9 import PROGRAM, _never_two_at_once, _spans

pytestmark = pytest.mark.slow

# Where the loop dies: at A's claim (A not yet provisioned); between A's close and B's
# claim (the policy asked again); then each point of B's sequence (probing.py), B's claim
# first.
POINTS = ("first-probe-claimed", "re-deciding", "probe-claimed", "provisioned",
          "probe-stopping", "probe-stopped", "probe-broken", "probe-starting",
          "probe-started")


def _run(tmp: Path, runs: Path) -> str:
    """The program: logs ``start|end <attempt> <pid> <ns>``; works 120 s unless stopped."""
    prog = tmp / "program.py"
    prog.write_text(PROGRAM)
    return (f"exec {shlex.quote(sys.executable)} {shlex.quote(str(prog))} "
            f"{shlex.quote(str(runs))} 120 120")


def _starts(runs: Path) -> list[tuple[int, int]]:
    """(attempt, pid) of each start of the program, in order."""
    if not runs.exists():
        return []
    return [(int(a), int(p)) for what, a, p, _ns in
            (line.split() for line in runs.read_text().splitlines() if line.strip())
            if what == "start"]


def _running_programs(runs: Path) -> list[int]:
    return [a for a, pid in _starts(runs) if _alive(pid)]


def _wait_started(runs: Path, attempt: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(a == attempt for a, _ in _starts(runs)):
            return
        time.sleep(0.05)
    raise AssertionError(f"attempt {attempt} never started its program")


def _where(offer: Any) -> tuple[str, str | None, str | None]:
    return offer.cloud, offer.region, offer.zone


class Places:
    """The on-demand placement held, and the two spot places probed (A, then B), fixed
    once so that what the failed probe records cannot change them."""

    def __init__(self, store: Any, job_id: str, settings: Any) -> None:
        from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
        from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec
        from gpuopt.providers.offer import Market

        plan = plan_spec(load_stored_spec(_job(store, job_id)), settings, store,
                         datetime.now(UTC)).plan
        od = plan.best_in(Market.ON_DEMAND)
        spots = [c for c in plan.candidates if c.offer.market is Market.SPOT]
        assert od is not None and spots
        self.on_demand, self.a = od, spots[0]
        self.b = next(c for c in spots if _where(c.offer) != _where(self.a.offer))


class RefusingA:
    """The local executor whose provisioning in place A finds no spot (SkyPilot's
    ResourcesUnavailable) and elsewhere brings the "node" up; asked under another kind,
    so the reconcile records the availability it observes."""

    kind = "sky-double"

    def __init__(self, inner: Any, a: tuple[str, str | None, str | None]) -> None:
        self.inner, self.a = inner, a
        self.refused: list[str] = []
        self.provisioned: list[str] = []

    def provision(self, spec: AttemptSpec) -> Provisioned:
        p = spec.placement
        if (p.cloud, p.region, p.zone) == self.a:
            self.refused.append(spec.cluster_name)
            raise LaunchError(f"no spot capacity for {p.instance_type} in {p.zone}",
                              FailureKind.CAPACITY)
        self.provisioned.append(spec.cluster_name)
        return self.inner.provision(spec)

    def __getattr__(self, name: str) -> Any:
        if name == "host":
            raise AttributeError(name)  # visible from anywhere, as SkyPilot's
        return getattr(self.inner, name)


class Failover:
    """The policy: on-demand from nothing; holding on-demand (once ``moving``), spot in
    A, or in B once a probe of A was refused for capacity; else keep. ``decided``: its
    picks; ``before_b``: called just before it picks B (where a test's loop dies)."""

    def __init__(self, places: Places) -> None:
        self.places = places
        self.moving = False
        self.decided: list[str] = []
        self.before_b: Callable[[], None] = lambda: None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from gpuopt.policies.next_attempt import Keep, Placed

        places, decided = self.places, self.decided
        held = kwargs.get("held")
        if held is None:
            decided.append("on-demand")
            return Placed(places.on_demand, None, "on-demand (test)")
        if held.market == "spot" or not self.moving:
            decided.append("keep")
            return Keep("keep (test)")
        attempts = args[4]
        refused = any(a.probe_of == held.number and a.end_reason == EndReason.FAILED
                      and a.failure_kind == FailureKind.CAPACITY
                      and (a.cloud, a.region, a.zone) == _where(places.a.offer)
                      for a in attempts)
        if refused:
            self.before_b()
        decided.append("B" if refused else "A")
        return Placed(places.b if refused else places.a, None,
                      f"spot in {'B' if refused else 'A'} (test)")


def _settings(probes_per_step: int = 3) -> Any:
    from gpuopt.orchestrator.config import load_config

    settings = _probing(load_config(None))
    return settings.model_copy(update={"spot": settings.spot.model_copy(
        update={"probes_per_step": probes_per_step})})


def _check_converged(store: Any, job_id: str, ex: RefusingA, places: Places, runs: Path,
                     t0: datetime) -> None:
    """Held closed moved; A's probe failed, free, recorded; B's probe carries the job."""
    from gpuopt.orchestrator.reconcile.observing import attempt_place
    from gpuopt.orchestrator.store.availability import load_observations
    from gpuopt.policies.spot.observed import ObservationKind

    held, a, b = _attempts(store, job_id)  # no other probe was made
    assert (held.status, held.end_reason, held.market) == (
        AttemptPhase.ENDED, EndReason.MOVED, "on-demand")
    assert (a.status, a.end_reason, a.failure_kind) == (
        AttemptPhase.ENDED, EndReason.FAILED, FailureKind.CAPACITY)
    assert a.probe_of == held.number and a.cost_micros == 0 and a.ended_at == a.started_at
    assert (a.cloud, a.region, a.zone) == _where(places.a.offer)
    assert ex.refused == [a.cluster_name]  # asked once (a fresh loop re-asks only a claim)
    assert b.probe_of == held.number and b.status == AttemptPhase.RUNNING
    assert (b.cloud, b.region, b.zone, b.market) == (*_where(places.b.offer), "spot")
    assert set(ex.provisioned) == {b.cluster_name}
    job = _job(store, job_id)
    assert job.status == JobStatus.RUNNING and job.restarts_used == 0
    assert _running_programs(runs) == [3]  # exactly one: B's probe's
    assert sorted(a for a, _ in _starts(runs)) == [1, 3]  # each started once, A never
    place = attempt_place(a)
    with store.session() as session:
        seen = load_observations(session, [place], t0 - timedelta(days=1))[place]
    assert [(o.at, o.kind) for o in seen if o.kind is ObservationKind.CAPACITY_FAILURE] \
        == [(a.started_at.replace(microsecond=0), ObservationKind.CAPACITY_FAILURE)]


def _setup(db_url: str, tmp_path: Path, probes_per_step: int = 3
           ) -> tuple[Any, str, Any, Places, RefusingA, Path]:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    runs = tmp_path / "runs.txt"
    job_id = submit(store, write_job(tmp_path, "failover", _run(tmp_path, runs)),
                    kind="sky-double")
    settings = _settings(probes_per_step)
    places = Places(store, job_id, settings)
    ex = RefusingA(LocalExecutor(tmp_path / "attempts", telemetry_interval=None,
                                 stop_grace_seconds=2), _where(places.a.offer))
    return store, job_id, settings, places, ex, runs


def _stepper(store: Any, ex: RefusingA, settings: Any, t0: datetime) -> Callable[[int], Any]:
    """One reconcile step ``s`` seconds after ``t0``, asserted free of errors."""
    import gpuopt.orchestrator.reconcile.step as reconcile

    def step(s: int) -> Any:
        report = reconcile.reconcile_once(store, lambda kind: ex, settings,
                                          t0 + timedelta(seconds=s))
        assert not report.errors, report.errors
        return report

    return step


def _stop_all(store: Any, ex: RefusingA, job_id: str) -> None:
    """Stop every attempt (each program logs its end on its SIGTERM)."""
    for at in _attempts(store, job_id):
        ex.stop(at.cluster_name)
    store.close()


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_at_each_point_of_a_failover_runs_the_program_once_at_a_time(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    import gpuopt.orchestrator.reconcile.probing as probing
    import gpuopt.orchestrator.reconcile.step as reconcile

    store, job_id, settings, places, ex, runs = _setup(db_url, tmp_path)
    t0 = datetime.now(UTC)

    step = _stepper(store, ex, settings, t0)

    policy = Failover(places)
    monkeypatch.setattr(reconcile, "_decide", policy)
    try:
        assert step(0).launched
        _wait_started(runs, 1)
        step(5)  # seen running, kept
        assert policy.decided == ["on-demand", "keep"]

        def die_at(name: str) -> None:
            first = point == "first-probe-claimed" and name == "probe-claimed"
            if (first and not ex.refused) or (name == point and ex.refused):
                raise Died

        def die_deciding() -> None:
            if point == "re-deciding":
                raise Died

        policy.moving, policy.before_b = True, die_deciding
        monkeypatch.setattr(probing, "crash_point", die_at)
        with pytest.raises(Died):
            step(20)
        died = len(_attempts(store, job_id))
        assert died == (2 if point in ("first-probe-claimed", "re-deciding") else 3)
        assert policy.decided[2:] == (["A"] if died == 2 else ["A", "B"])
        if POINTS.index(point) < POINTS.index("probe-stopped"):
            assert _running_programs(runs) == [1]  # the held attempt runs on
        else:  # stopped; nothing else, or only the probe's (started before it died)
            assert _running_programs(runs) in ([], [3])
        monkeypatch.setattr(probing, "crash_point", lambda name: None)
        policy.before_b = lambda: None  # a fresh loop, the same policy
        for s in (40, 60, 80):
            step(s)
            assert len(_running_programs(runs)) <= 1
        _wait_started(runs, 3)
        step(100)
        _check_converged(store, job_id, ex, places, runs, t0)
    finally:
        _stop_all(store, ex, job_id)
    _never_two_at_once(runs)  # each started once, ended, never overlapping
    assert sorted(_spans(runs)) == [1, 3]


@pytest.mark.parametrize("probes_per_step", [3, 1])
def test_probes_per_step_caps_the_probes_one_step_makes(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        probes_per_step: int) -> None:
    """Three probes a step (the default): A refused, B probed and moved to in the same
    step. One: the step makes only A's probe; B's is the next step's."""
    import gpuopt.orchestrator.reconcile.step as reconcile

    store, job_id, settings, places, ex, runs = _setup(db_url, tmp_path, probes_per_step)
    t0 = datetime.now(UTC)

    step = _stepper(store, ex, settings, t0)

    policy = Failover(places)
    monkeypatch.setattr(reconcile, "_decide", policy)
    try:
        assert step(0).launched
        _wait_started(runs, 1)
        step(5)
        policy.moving = True
        step(20)
        if probes_per_step == 1:
            held, a = _attempts(store, job_id)  # one probe, refused; B not asked
            assert policy.decided[2:] == ["A"] and ex.refused == [a.cluster_name]
            assert ex.provisioned == []
            assert held.status == AttemptPhase.RUNNING and a.end_reason == EndReason.FAILED
            assert _running_programs(runs) == [1]
            step(40)  # the next step: B
        assert policy.decided[2:] == ["A", "B"]
        assert len(_attempts(store, job_id)) == 3
        _wait_started(runs, 3)
        step(60)
        _check_converged(store, job_id, ex, places, runs, t0)
    finally:
        _stop_all(store, ex, job_id)
    _never_two_at_once(runs)
    assert sorted(_spans(runs)) == [1, 3]


def test_a_place_refused_in_this_step_is_not_probed_again_in_it(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy that, told A had no spot, picks A again: the step stops failing over (as
    the replay, which never probes a location seen that tick again); the held attempt
    runs on, A was asked once and recorded once. (Before: A probed probes_per_step times
    in the step, each a failed probe row and a capacity observation.)"""
    import gpuopt.orchestrator.reconcile.step as reconcile
    from gpuopt.orchestrator.reconcile.observing import attempt_place
    from gpuopt.orchestrator.store.availability import load_observations
    from gpuopt.policies.spot.observed import ObservationKind

    store, job_id, settings, places, ex, runs = _setup(db_url, tmp_path)
    places.b = places.a  # told A was refused, it picks A again
    t0 = datetime.now(UTC)

    step = _stepper(store, ex, settings, t0)

    policy = Failover(places)
    monkeypatch.setattr(reconcile, "_decide", policy)
    try:
        assert step(0).launched
        _wait_started(runs, 1)
        step(5)
        policy.moving = True
        step(20)
        assert policy.decided[2:] == ["A", "B"]  # asked again, picked A again
        held, a = _attempts(store, job_id)  # one probe only
        assert ex.refused == [a.cluster_name] and ex.provisioned == []
        assert (a.end_reason, a.failure_kind, a.cost_micros) == (
            EndReason.FAILED, FailureKind.CAPACITY, 0)
        assert held.status == AttemptPhase.RUNNING and _running_programs(runs) == [1]
        place = attempt_place(a)
        with store.session() as session:
            seen = load_observations(session, [place], t0 - timedelta(days=1))[place]
        assert sum(o.kind is ObservationKind.CAPACITY_FAILURE for o in seen) == 1
    finally:
        _stop_all(store, ex, job_id)
