"""A reconcile step loads the offers and the observed preemptions once and plans each
job once (issue 12: they were loaded, and planned 3-4 times, per job)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpuopt.core.places import Place
from gpuopt.jobs.executors.base import AttemptState, AttemptStatus, LaunchResult
from gpuopt.jobs.states import AttemptPhase, EndReason, FailureKind
from gpuopt.orchestrator.reconcile.placement_inputs import TickInputs
from gpuopt.orchestrator.store.jobs_tables import AttemptRow
from gpuopt.policies.index import OfferIndex
from tests.orchestrator.reconcile.conftest import submit, write_job

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


class Instant:
    kind = "local"

    def __init__(self) -> None:
        self.running: set[str] = set()

    def launch(self, spec: Any) -> LaunchResult:
        self.running.add(spec.cluster_name)
        return LaunchResult(spec.cluster_name, adopted=False)

    def adopt(self, name: str) -> AttemptStatus:
        return AttemptStatus(name, AttemptState.RUNNING if name in self.running
                             else AttemptState.UNKNOWN)

    poll = adopt

    def stop(self, name: str) -> AttemptStatus:
        self.running.discard(name)
        return AttemptStatus(name, AttemptState.CANCELLED)


def test_one_load_per_step_and_one_plan_per_job(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuopt.orchestrator.reconcile.placement_inputs as planning
    import gpuopt.policies.next_attempt as placement
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    ids = [submit(store, write_job(tmp_path, f"j{i}", "true")) for i in range(3)]
    counts = {"load_index": 0, "plan_job": 0}
    for module, name in ((planning, "load_index"), (placement, "plan_job")):
        real = getattr(module, name)

        def counted(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            counts[_name] += 1
            return _real(*a, **k)

        monkeypatch.setattr(module, name, counted)
    ex = Instant()
    report = reconcile_once(store, lambda kind: ex, load_config(None))
    assert not report.errors and len(report.launched) == len(ids)
    assert counts == {"load_index": 1, "plan_job": len(ids)}
    counts.update(load_index=0, plan_job=0)
    report = reconcile_once(store, lambda kind: ex, load_config(None))  # all running
    assert not report.errors and len(report.watched) == len(ids)
    # spot: auto with a deadline: the spot policy is asked again for each running job
    # (keep or move), on one plan each and the step's one offer index
    assert counts == {"load_index": 1, "plan_job": len(ids)}
    assert not report.launched
    store.close()


def _attempt(id_: int, reason: EndReason, kind: FailureKind | None, ended: datetime,
             zone: str = "z1") -> AttemptRow:
    return AttemptRow(id=id_, job_id="j", number=id_, cluster_name=f"c{id_}", cloud="aws",
                      region="r1", zone=zone, instance_type="i", gpu="A10G", gpu_count=1,
                      market="spot", price_per_hour_micros=1, status=AttemptPhase.ENDED,
                      created_at=T0, started_at=T0, ended_at=ended, end_reason=reason,
                      failure_kind=kind)


def test_a_jobs_own_ends_after_the_load_count_against_their_place() -> None:
    """What the step loaded (other jobs', the job's earlier ones) plus the job's own
    attempts that ended after the load, each once."""
    here = Place("aws", "r1", "z1")
    tick = TickInputs(now=T0, index=OfferIndex.build([]), observed={},
                      recent=((1, "local", here, T0 - timedelta(minutes=5)),
                              (7, "skypilot", here, T0 - timedelta(minutes=4))),
                      since=T0 - timedelta(hours=1))
    own = [
        _attempt(1, EndReason.PREEMPTED, None, T0 - timedelta(minutes=5)),  # loaded
        _attempt(2, EndReason.PREEMPTED, None, T0),  # ended in this step
        _attempt(3, EndReason.FAILED, FailureKind.CAPACITY, T0),
        _attempt(4, EndReason.FAILED, FailureKind.PROGRAM, T0),  # not the place's fault
        _attempt(5, EndReason.PREEMPTED, None, T0 - timedelta(hours=2)),  # too old
        _attempt(6, EndReason.SUCCEEDED, None, T0),
    ]
    got = tick.preemptions_for("local", own)
    assert sorted(at for _, at in got) == [T0 - timedelta(minutes=5), T0, T0]
    assert {p for p, _ in got} == {here}
