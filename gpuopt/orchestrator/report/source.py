"""The report's data source in the store, imported lazily.

The store provides, in ``orchestrator/store/ledger_repo.py``::

    def load_report_ledger(
        session: sqlmodel.Session, start: datetime, end: datetime
    ) -> tuple[Sequence[AttemptRecord], Sequence[JobRecord]]:

returning (1) every attempt overlapping [start, end) — ``started_at < end`` and
(``ended_at`` is NULL or ``ended_at > start``) — plus every attempt started before ``end``
of the jobs those attempts belong to (the report's cost to date and budget burn), and
(2) the JobRecords of those jobs and of the jobs with ``finished_at`` in [start, end).
``start``/``end`` are aware UTC; the records' prices are those recorded at launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord
from gpuopt.orchestrator.report.service import LedgerLoader


def with_telemetry(session: object, attempts: Sequence[AttemptRecord]) -> list[AttemptRecord]:
    """The attempts with what their GPU sampler measured (utilisation, tokens)."""
    from dataclasses import replace

    from gpuopt.orchestrator.store.telemetry_repo import telemetry_by_attempt

    found = telemetry_by_attempt(session, {a.job_id for a in attempts})  # type: ignore[arg-type]
    out = []
    for a in attempts:
        t = found.get((a.job_id, a.attempt))
        out.append(a if t is None else replace(
            a, utilization_pct=t.mean_utilization_pct, tokens_processed=t.tokens_processed))
    return out


def store_loader(database_url: str | None = None) -> LedgerLoader:
    """A LedgerLoader reading the store at ``database_url`` (None = the configured one)."""

    def load(
        start: datetime, end: datetime
    ) -> tuple[Sequence[AttemptRecord], Sequence[JobRecord]]:
        from gpuopt.orchestrator.store import open_store_if_exists
        from gpuopt.orchestrator.store.ledger_repo import load_report_ledger

        store = open_store_if_exists(database_url)
        if store is None:  # a fresh machine: nothing has run yet
            return [], []
        try:
            with store.session() as session:
                attempts, jobs = load_report_ledger(session, start, end)
                return with_telemetry(session, attempts), list(jobs)
        finally:
            store.close()

    return load
