"""What the running daemon knows about itself (for /healthz, /metrics and shutdown).

One object per daemon process, created by the runner and handed to the tasks and the
metrics collector; every field is guarded by one lock.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    at: datetime
    ok: bool
    seconds: float
    error: str | None = None


@dataclass
class DaemonHealth:
    node_id: str
    role: str = "starting"  # starting | leader | standby | stopping
    leader_since: datetime | None = None
    loop_beat: float = field(default_factory=time.monotonic)
    outcomes: dict[str, TaskOutcome] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    # Reconcile steps of single jobs that raised, by kind (exception type), since start.
    job_step_failures: dict[str, int] = field(default_factory=dict)
    # attempts whose stop failed, as the last reconcile step saw them: (job, attempt, kind)
    stop_failed: list[tuple[str, int, str]] = field(default_factory=list)
    refusal: str | None = None  # why it will not lead now (daemon/local_hosts.py)
    _running: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def set_role(self, role: str, leader_since: datetime | None) -> None:
        with self._cond:
            self.role, self.leader_since = role, leader_since

    def beat(self) -> None:
        with self._cond:
            self.loop_beat = time.monotonic()

    def seconds_since_beat(self) -> float:
        with self._cond:
            return time.monotonic() - self.loop_beat

    def task_started(self) -> None:
        with self._cond:
            self._running += 1

    def task_finished(self, name: str, outcome: TaskOutcome) -> None:
        with self._cond:
            self._running -= 1
            self.outcomes[name] = outcome
            self.runs[name] = self.runs.get(name, 0) + 1
            if not outcome.ok:
                self.failures[name] = self.failures.get(name, 0) + 1
            self._cond.notify_all()

    def job_steps_failed(self, kinds: list[str]) -> None:
        with self._cond:
            for kind in kinds:
                self.job_step_failures[kind] = self.job_step_failures.get(kind, 0) + 1

    def set_refusal(self, why: str | None) -> None:
        with self._cond:
            self.refusal = why

    def saw_stop_failed(self, attempts: list[tuple[str, int, str]]) -> None:
        with self._cond:
            self.stop_failed = list(attempts)

    def stop_failed_attempts(self) -> list[tuple[str, int, str]]:
        with self._cond:
            return list(self.stop_failed)

    def job_step_failures_by_kind(self) -> dict[str, int]:
        with self._cond:
            return dict(self.job_step_failures)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no task runs; False if some still run after ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: self._running == 0, timeout)

    def snapshot(self) -> tuple[str, datetime | None, dict[str, TaskOutcome], dict[str, int],
                                dict[str, int]]:
        with self._cond:
            return (self.role, self.leader_since, dict(self.outcomes), dict(self.runs),
                    dict(self.failures))
