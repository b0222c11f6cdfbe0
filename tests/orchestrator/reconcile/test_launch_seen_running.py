"""A spot launch whose outcome was unknown (``LaunchOutcomeUnknown``: the attempt stays
open in LAUNCHING) records its ``launch_ok`` when a later step first sees it running:
once, at the executor's ``started_at`` when it reports one, also with two loops on one
store; a launch that returned (and recorded its own) gets no second one."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gpuopt.jobs.executors.base import (
    AttemptSpec,
    AttemptState,
    AttemptStatus,
    LaunchOutcomeUnknown,
    LaunchResult,
)
from gpuopt.jobs.states import AttemptPhase
from tests.orchestrator.reconcile.conftest import submit
from tests.orchestrator.reconcile.test_availability_recording import (
    T0,
    K,
    _attempts,
    _job_file,
    _place,
    _step,
    _stored,
)


@dataclass
class Unknown:
    """An executor double (kind ``skypilot``): the launch's outcome is unknown unless
    ``returns``; adopt answers ``state`` with ``started_at``, after waiting at
    ``barrier`` when one is set (two loops both see the attempt LAUNCHING)."""

    returns: bool = False
    state: AttemptState = AttemptState.PENDING
    started_at: datetime | None = None
    barrier: threading.Barrier | None = None
    kind: str = "skypilot"
    launched: list[str] = field(default_factory=list)

    def launch(self, spec: AttemptSpec) -> LaunchResult:
        self.launched.append(spec.cluster_name)
        if not self.returns:
            raise LaunchOutcomeUnknown("ReadTimeout while submitting the launch")
        return LaunchResult(spec.cluster_name, adopted=False)

    def adopt(self, name: str) -> AttemptStatus:
        if self.barrier is not None:
            self.barrier.wait(timeout=60)
        return AttemptStatus(name, self.state, started_at=self.started_at)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"not expected: {name}")


def _submitted(db_url: str, tmp_path: Path) -> tuple[Any, str]:
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    return store, submit(store, _job_file(tmp_path, "seen", "always"), "skypilot")


def test_an_unknown_launch_first_seen_running_records_launch_ok_once(
        db_url: str, tmp_path: Path) -> None:
    ex = Unknown()
    store, job_id = _submitted(db_url, tmp_path)
    _step(store, ex, T0)  # outcome unknown: open, nothing recorded
    [a] = _attempts(store, job_id)
    assert a.status == AttemptPhase.LAUNCHING and a.market == "spot"
    assert _stored(store) == {}
    _step(store, ex, T0 + timedelta(minutes=1))  # still provisioning: nothing yet
    assert _stored(store) == {}
    ex.state, ex.started_at = AttemptState.RUNNING, T0 + timedelta(seconds=90)
    _step(store, ex, T0 + timedelta(minutes=2))
    [a] = _attempts(store, job_id)
    assert a.status == AttemptPhase.RUNNING
    want = {_place(a): [(T0 + timedelta(seconds=90), K.LAUNCH_OK)]}
    assert _stored(store) == want
    _step(store, ex, T0 + timedelta(minutes=3))  # running on: nothing more
    ex.started_at = None
    _step(store, ex, T0 + timedelta(minutes=4))
    assert _stored(store) == want
    assert ex.launched == [a.cluster_name]
    store.close()


def test_without_a_started_at_it_is_the_step_that_saw_it_running(
        db_url: str, tmp_path: Path) -> None:
    ex = Unknown()
    store, job_id = _submitted(db_url, tmp_path)
    _step(store, ex, T0)
    # A started_at before the attempt existed is not believed: the step's time is.
    ex.state, ex.started_at = AttemptState.RUNNING, T0 - timedelta(hours=1)
    seen = T0 + timedelta(minutes=2)
    _step(store, ex, seen)
    [a] = _attempts(store, job_id)
    assert _stored(store) == {_place(a): [(seen, K.LAUNCH_OK)]}
    store.close()


def test_a_launch_that_returned_gets_no_second_launch_ok(db_url: str,
                                                         tmp_path: Path) -> None:
    ex = Unknown(returns=True, state=AttemptState.RUNNING,
                 started_at=T0 + timedelta(seconds=90))
    store, job_id = _submitted(db_url, tmp_path)
    _step(store, ex, T0)  # launched: launch_ok at T0
    _step(store, ex, T0 + timedelta(minutes=2))  # LAUNCHING -> RUNNING
    [a] = _attempts(store, job_id)
    assert a.status == AttemptPhase.RUNNING
    assert _stored(store) == {_place(a): [(T0, K.LAUNCH_OK)]}
    store.close()


def test_two_loops_seeing_it_running_record_it_once(db_url: str, tmp_path: Path) -> None:
    """Both loops load the attempt in LAUNCHING before either moves it (the barrier in
    adopt); only the one whose conditional LAUNCHING -> RUNNING matched records."""
    from gpuopt.orchestrator.store import open_store

    setup, job_id = _submitted(db_url, tmp_path)
    _step(setup, Unknown(), T0)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def loop(at: datetime) -> None:  # one "daemon": its own store handle and executor
        store = open_store(db_url)
        try:
            _step(store, Unknown(state=AttemptState.RUNNING, barrier=barrier), at)
        except BaseException as err:  # reported below, not lost in the thread
            errors.append(err)
        finally:
            store.close()

    times = (T0 + timedelta(minutes=2), T0 + timedelta(minutes=2, seconds=5))
    threads = [threading.Thread(target=loop, args=(t,)) for t in times]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and not any(t.is_alive() for t in threads)
    [a] = _attempts(setup, job_id)
    assert a.status == AttemptPhase.RUNNING
    [(place, rows)] = _stored(setup).items()
    assert place == _place(a)
    assert [kind for _, kind in rows] == [K.LAUNCH_OK]
    assert rows[0][0] in times
    setup.close()
