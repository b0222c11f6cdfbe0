"""A move of the deadline spot policy (stop the attempt, launch another) interrupted by a
dead loop: the next loop ends the attempt as moved and places the job again; never as
"stopped outside gpuopt" (which ended the job cancelled), never two attempts at once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.states import AttemptPhase, EndReason, JobStatus
from tests.orchestrator.reconcile.conftest import submit, write_job
from tests.orchestrator.reconcile.test_once_per_tick import Instant


class Died(BaseException):
    """Stands for kill -9: nothing after it runs (not an Exception: no handler sees it)."""


def _attempts(store: Any, job_id: str) -> list[Any]:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    with store.session() as session:
        return attempts_of(session, [job_id])[job_id]


def _job(store: Any, job_id: str) -> Any:
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    with store.session() as session:
        return session.get(JobRow, job_id)


@pytest.mark.parametrize("stopped", [False, True], ids=["before-stop", "after-stop"])
def test_a_move_cut_short_ends_the_attempt_moved_and_places_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stopped: bool) -> None:
    import gpuopt.orchestrator.reconcile.step as reconcile
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store
    from gpuopt.policies.next_attempt import Placed

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    job_id = submit(store, write_job(tmp_path, "mover", "true"))
    ex = Instant()
    settings = load_config(None)
    t0 = datetime.now(UTC)
    step: Callable[[int], Any] = lambda s: reconcile.reconcile_once(  # noqa: E731
        store, lambda kind: ex, settings, t0 + timedelta(seconds=s))
    assert step(0).launched
    [first] = _attempts(store, job_id)

    def move_to_on_demand(*args: Any, **kwargs: Any) -> Any:
        """The policy wants on-demand for the running job: a move."""
        from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
        from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec
        from gpuopt.providers.offer import Market

        spec = load_stored_spec(_job(store, job_id))
        od = plan_spec(spec, settings, store, t0).plan.best_in(Market.ON_DEMAND)
        assert od is not None
        return Placed(od, None, "deadline policy: on-demand (test)")

    def die_at(name: str) -> None:
        if name == "stopping":
            raise Died

    monkeypatch.setattr(reconcile, "_decide", move_to_on_demand)
    monkeypatch.setattr(reconcile, "crash_point", die_at)
    with pytest.raises(Died):
        step(20)
    [marked] = _attempts(store, job_id)
    assert marked.status == AttemptPhase.STOPPING  # the intent is recorded, nothing else
    assert first.cluster_name in ex.running  # the executor was not asked to stop yet
    if stopped:
        ex.stop(first.cluster_name)  # the stop went through, the close did not
    monkeypatch.undo()
    step(40)  # a fresh loop finishes the move
    job = _job(store, job_id)
    ended = _attempts(store, job_id)[0]
    assert ended.status == AttemptPhase.ENDED and ended.end_reason == EndReason.MOVED
    assert first.cluster_name not in ex.running
    assert job.status not in (JobStatus.CANCELLED, JobStatus.FAILED)
    step(60)  # placed again
    attempts = _attempts(store, job_id)
    assert len(attempts) == 2 and attempts[1].status in (AttemptPhase.LAUNCHING,
                                                         AttemptPhase.RUNNING)
    assert len(ex.running) == 1  # never two attempts of the job at once
    store.close()
