"""The daemon's weekly send: once per (week, scope), retried with exponential backoff.

``ReportSender.tick(now)`` is safe to call on every daemon tick. For the latest week
whose report is due it sends each scope (the everyone-report and one per team with
recipients) unless the scope was already sent; a failure is recorded and retried on a
later tick once the backoff has passed. The bookkeeping is the ``SentWeeks`` protocol:
the store backs it with a table so that a restarted daemon neither re-sends a week nor
forgets its backoff (tests keep it in memory: tests/orchestrator/report/sent_weeks.py).

Delivery is at-least-once: a crash between the SMTP server's acceptance and
``mark_sent`` would send that scope again on the next tick.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from decimal import Decimal
from email.message import EmailMessage
from types import MappingProxyType
from typing import Protocol
from zoneinfo import ZoneInfo

from gpuopt.core.backoff import Backoff, FailureState
from gpuopt.core.errors import UserError
from gpuopt.orchestrator.report.message import build_message
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.service import LedgerLoader, load_report
from gpuopt.orchestrator.report.weeks import IsoWeek, local_midnight

EVERYONE = "everyone"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

log = logging.getLogger(__name__)


def team_scope(team: str) -> str:
    return f"team:{team}"


class SentWeeks(Protocol):
    """Which (week, scope) reports went out, and the failures of those that did not yet."""

    def was_sent(self, week: IsoWeek, scope: str) -> bool: ...

    def mark_sent(self, week: IsoWeek, scope: str, at: datetime) -> None: ...

    def record_failure(self, week: IsoWeek, scope: str, at: datetime, error: str) -> None: ...

    def failure_state(self, week: IsoWeek, scope: str) -> FailureState | None: ...


@dataclass(frozen=True, slots=True)
class Recipients:
    everyone: tuple[str, ...] = ()
    teams: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def scopes(self) -> list[tuple[str, str | None, tuple[str, ...]]]:
        """(scope, team filter, addresses) for every scope that has addresses."""
        out: list[tuple[str, str | None, tuple[str, ...]]] = []
        if self.everyone:
            out.append((EVERYONE, None, self.everyone))
        for team, addresses in sorted(self.teams.items()):
            if addresses:
                out.append((team_scope(team), team, tuple(addresses)))
        return out


@dataclass(frozen=True, slots=True)
class Schedule:
    """The report of week W is due on ``weekday`` at ``at`` (local) of the week after W."""

    tz: ZoneInfo
    weekday: str = "monday"
    at: time = time(8, 0)

    def due_at(self, week: IsoWeek) -> datetime:
        day = week.next().monday + timedelta(days=WEEKDAYS.index(self.weekday))
        return local_midnight(day, self.tz) + timedelta(hours=self.at.hour, minutes=self.at.minute)

    def latest_due(self, now: datetime) -> IsoWeek:
        week = IsoWeek.containing(now, self.tz).previous()
        return week if now >= self.due_at(week) else week.previous()


@dataclass(frozen=True, slots=True)
class SendOutcome:
    week: IsoWeek
    scope: str
    status: str  # sent | already-sent | waiting | failed
    error: str | None = None
    retry_at: datetime | None = None


class ReportSender:
    def __init__(
        self,
        *,
        loader: LedgerLoader,
        mailer: Callable[[EmailMessage], None],
        sent: SentWeeks,
        recipients: Recipients,
        schedule: Schedule,
        sender_address: str,
        team_budgets: Mapping[str, Decimal] = MappingProxyType({}),
        backoff: Backoff = Backoff(),
    ) -> None:
        self.loader = loader
        self.mailer = mailer
        self.sent = sent
        self.recipients = recipients
        self.schedule = schedule
        self.sender_address = sender_address
        self.team_budgets = team_budgets
        self.backoff = backoff

    def tick(self, now: datetime) -> list[SendOutcome]:
        week = self.schedule.latest_due(now)
        outcomes = []
        for scope, team, addresses in self.recipients.scopes():
            outcomes.append(self._one(week, scope, team, addresses, now))
        return outcomes

    def _one(
        self, week: IsoWeek, scope: str, team: str | None, addresses: tuple[str, ...],
        now: datetime,
    ) -> SendOutcome:
        if self.sent.was_sent(week, scope):
            return SendOutcome(week, scope, "already-sent")
        failed = self.sent.failure_state(week, scope)
        if failed is not None:
            retry_at = failed.last_at + self.backoff.delay(failed.count)
            if now < retry_at:
                return SendOutcome(week, scope, "waiting", failed.last_error, retry_at)
        try:
            report = self._report(week, team, now)
            msg = build_message(
                report, sender=self.sender_address, recipients=addresses, sent_at=now
            )
            self.mailer(msg)
        except (UserError, OSError) as err:
            error = str(err)
            self.sent.record_failure(week, scope, now, error)
            state = self.sent.failure_state(week, scope)
            retry_at = now + self.backoff.delay(state.count if state else 1)
            log.warning("weekly report %s for %s not sent (retry after %s): %s",
                        week, scope, retry_at.isoformat(), error)
            return SendOutcome(week, scope, "failed", error, retry_at)
        self.sent.mark_sent(week, scope, now)
        log.info("weekly report %s for %s sent to %d recipient(s)", week, scope, len(addresses))
        return SendOutcome(week, scope, "sent")

    def _report(self, week: IsoWeek, team: str | None, now: datetime) -> WeeklyReport:
        return load_report(
            self.loader, week, self.schedule.tz, as_of=now, team=team,
            team_budgets=self.team_budgets,
        )
