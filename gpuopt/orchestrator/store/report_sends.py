"""The report sender's ``SentWeeks`` bookkeeping in the store (table ``report_sends``).

Each method is one short transaction, so "sent" survives a restart and is shared by every
daemon on the same database. ``mark_sent`` is an upsert that never moves an existing
``sent_at``: a second daemon (or a retried tick) marking the same (week, scope) changes
nothing, and ``was_sent`` then answers True everywhere.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from gpuopt.core.backoff import Backoff, FailureState
from gpuopt.orchestrator.store.daemon_tables import ReportSendRow

if TYPE_CHECKING:
    from gpuopt.orchestrator.store.engine import Store

MAX_ERROR_CHARS = 2000
# An ISO week (orchestrator.report.weeks.IsoWeek), stored as its text ("2026-W48"); the
# store needs nothing else of it, and imports nothing from report/.
Week = object


def dialect_insert(dialect: str, table: Any) -> Any:
    """INSERT with ON CONFLICT support for SQLite and PostgreSQL."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)


class StoreSentWeeks:
    """``orchestrator.report.sender.SentWeeks`` backed by ``report_sends``; a week is
    anything whose ``str`` is its ISO name (an ``IsoWeek``)."""

    def __init__(self, store: Store, backoff: Backoff = Backoff()) -> None:
        self.store = store
        self.backoff = backoff
        self._table = ReportSendRow.__table__  # type: ignore[attr-defined]

    def _row(self, week: Week, scope: str) -> Any:
        from sqlalchemy import select

        t = self._table
        with self.store.engine.connect() as conn:
            return conn.execute(
                select(t).where(t.c.week == str(week), t.c.scope == scope)
            ).first()

    def was_sent(self, week: Week, scope: str) -> bool:
        row = self._row(week, scope)
        return row is not None and row.sent_at is not None

    def mark_sent(self, week: Week, scope: str, at: datetime) -> None:
        from sqlalchemy import func

        t = self._table
        stmt = dialect_insert(self.store.dialect, t).values(
            week=str(week), scope=scope, sent_at=at, failures=0
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["week", "scope"],
            set_={"sent_at": func.coalesce(t.c.sent_at, stmt.excluded.sent_at),
                  "next_try_at": None},
        )
        with self.store.engine.begin() as conn:
            conn.execute(stmt)

    def record_failure(self, week: Week, scope: str, at: datetime, error: str) -> None:
        t = self._table
        error = error[:MAX_ERROR_CHARS]
        stmt = dialect_insert(self.store.dialect, t).values(
            week=str(week), scope=scope, failures=1, last_failure_at=at, last_error=error,
            next_try_at=at + self.backoff.delay(1),
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["week", "scope"],
            set_={"failures": t.c.failures + 1, "last_failure_at": at, "last_error": error},
        )
        with self.store.engine.begin() as conn:
            conn.execute(stmt)
            # next_try_at from the new count, for `gpuopt daemon status`.
            count = conn.execute(
                t.select().with_only_columns(t.c.failures)
                .where(t.c.week == str(week), t.c.scope == scope)
            ).scalar_one()
            conn.execute(
                t.update().where(t.c.week == str(week), t.c.scope == scope, t.c.sent_at.is_(None))
                .values(next_try_at=at + self.backoff.delay(count))
            )

    def failure_state(self, week: Week, scope: str) -> FailureState | None:
        row = self._row(week, scope)
        if row is None or row.sent_at is not None or not row.failures:
            return None
        return FailureState(row.failures, row.last_failure_at, row.last_error or "")


def pending_retries(store: Store) -> list[tuple[str, str, datetime]]:
    """(week, scope, next_try_at) of every unsent report that is waiting for a retry."""
    from sqlalchemy import select

    t = ReportSendRow.__table__  # type: ignore[attr-defined]
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(t.c.week, t.c.scope, t.c.next_try_at)
            .where(t.c.sent_at.is_(None), t.c.next_try_at.is_not(None))
            .order_by(t.c.next_try_at)
        ).all()
    return [(r.week, r.scope, r.next_try_at) for r in rows]
