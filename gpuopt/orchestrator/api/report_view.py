"""The weekly report read from the server's own store (for the API and dashboard)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord
    from gpuopt.orchestrator.report.model import WeeklyReport
    from gpuopt.orchestrator.report.service import LedgerLoader
    from gpuopt.orchestrator.store import Store


def store_ledger(store: Store) -> LedgerLoader:
    def load(start: datetime, end: datetime
             ) -> tuple[Sequence[AttemptRecord], Sequence[JobRecord]]:
        from gpuopt.orchestrator.report.source import with_telemetry
        from gpuopt.orchestrator.store.ledger_repo import load_report_ledger

        with store.session() as session:
            attempts, jobs = load_report_ledger(session, start, end)
            return with_telemetry(session, attempts), list(jobs)

    return load


def team_report(store: Store, settings: Settings, week: str | None, team: str | None,
                owner: str | None, now: datetime) -> WeeklyReport:
    from gpuopt.orchestrator.cli.report_cmd import _parse_week
    from gpuopt.orchestrator.report import from_config
    from gpuopt.orchestrator.report.service import load_report
    from gpuopt.orchestrator.report.weeks import IsoWeek

    tz = from_config.report_timezone(settings)
    the_week = _parse_week(week) if week else IsoWeek.containing(now, tz).previous()
    return load_report(store_ledger(store), the_week, tz, as_of=now, owner=owner, team=team,
                       team_budgets=from_config.team_budgets(settings))
