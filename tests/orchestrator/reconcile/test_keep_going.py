"""A reconcile tick asks ``keep_going`` before each job and stops at the first False (the
daemon passes "still the leader?": a leader that lost its lock launches nothing more in
the tick under way, issue 13.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.orchestrator.reconcile.conftest import submit, train_run, write_job


class RecordingExecutor:
    kind = "local"

    def __init__(self) -> None:
        self.launched: list[str] = []

    def launch(self, spec: Any) -> Any:
        self.launched.append(spec.cluster_name)
        raise RuntimeError("not launching anything in this test")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected executor call {name}")


def test_a_tick_stops_at_the_first_job_keep_going_refuses(tmp_path: Path) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    try:
        for i in range(3):
            (tmp_path / f"j{i}").mkdir()
            submit(store, write_job(tmp_path / f"j{i}", f"kg{i}", train_run(10, 0.01)))
        answers = iter([True, False, True])
        asked: list[bool] = []

        def keep_going() -> bool:
            asked.append(next(answers))
            return asked[-1]

        ex = RecordingExecutor()
        reconcile_once(store, lambda kind: ex, load_config(None), keep_going=keep_going)
        assert asked == [True, False]  # never asked again after the refusal
        assert len(ex.launched) == 1
        ex2 = RecordingExecutor()
        reconcile_once(store, lambda kind: ex2, load_config(None))  # no guard: every job
        # The two jobs the first tick never reached are launched now.
        assert len(set(ex2.launched) - set(ex.launched)) >= 2
    finally:
        store.close()
