"""The in-memory SentWeeks (the product's is store-backed: store/report_sends.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from gpuopt.orchestrator.report.sender import FailureState
from gpuopt.orchestrator.report.weeks import IsoWeek


@dataclass
class InMemorySentWeeks:
    sent: dict[tuple[IsoWeek, str], datetime] = field(default_factory=dict)
    failures: dict[tuple[IsoWeek, str], FailureState] = field(default_factory=dict)

    def was_sent(self, week: IsoWeek, scope: str) -> bool:
        return (week, scope) in self.sent

    def mark_sent(self, week: IsoWeek, scope: str, at: datetime) -> None:
        self.sent.setdefault((week, scope), at)
        self.failures.pop((week, scope), None)

    def record_failure(self, week: IsoWeek, scope: str, at: datetime, error: str) -> None:
        prev = self.failures.get((week, scope))
        self.failures[(week, scope)] = FailureState((prev.count if prev else 0) + 1, at, error)

    def failure_state(self, week: IsoWeek, scope: str) -> FailureState | None:
        return self.failures.get((week, scope))
