"""The daemon-side sender: once per week and scope, retried with backoff, on a real server."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from email import policy
from email.parser import BytesParser
from zoneinfo import ZoneInfo

import pytest

from gpuopt.core.backoff import Backoff
from gpuopt.orchestrator.report.sender import (
    EVERYONE,
    Recipients,
    ReportSender,
    Schedule,
    team_scope,
)
from gpuopt.orchestrator.report.smtp import SmtpMailer, SmtpSettings
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.net import free_port
from tests.orchestrator.report.conftest import PASSWORD, USER, Sink, SmtpFactory
from tests.orchestrator.report.ledger import TEAM_BUDGETS, loader
from tests.orchestrator.report.sent_weeks import InMemorySentWeeks

pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
UTC_ZONE = ZoneInfo("UTC")
W48 = IsoWeek(2026, 48)
MONDAY_9 = datetime(2026, 11, 30, 9, tzinfo=UTC)  # W48's report is due Mon 30 Nov 08:00


def make_sender(port: int, sent: InMemorySentWeeks, recipients: Recipients) -> ReportSender:
    settings = SmtpSettings("127.0.0.1", port, security="none", username=USER, timeout_s=5)
    return ReportSender(
        loader=loader,
        mailer=SmtpMailer(settings, lambda: PASSWORD),
        sent=sent,
        recipients=recipients,
        schedule=Schedule(UTC_ZONE, "monday", time(8, 0)),
        sender_address="gpuopt@example.com",
        team_budgets=TEAM_BUDGETS,
        backoff=Backoff(first=timedelta(minutes=5), factor=2, cap=timedelta(hours=1)),
    )


def test_schedule_picks_the_latest_due_week() -> None:
    schedule = Schedule(ZoneInfo("America/Los_Angeles"), "monday", time(8, 0))
    # Mon 30 Nov 2026 08:00 in Los Angeles = 16:00 UTC.
    assert schedule.due_at(W48) == datetime(2026, 11, 30, 16, tzinfo=UTC)
    assert schedule.latest_due(datetime(2026, 11, 30, 15, 59, tzinfo=UTC)) == IsoWeek(2026, 47)
    assert schedule.latest_due(datetime(2026, 11, 30, 16, 0, tzinfo=UTC)) == W48
    assert schedule.latest_due(datetime(2026, 12, 6, 12, tzinfo=UTC)) == W48


def test_backoff_doubles_up_to_the_cap() -> None:
    b = Backoff(first=timedelta(minutes=5), factor=2, cap=timedelta(minutes=30))
    assert [b.delay(n) for n in range(1, 6)] == [
        timedelta(minutes=m) for m in (5, 10, 20, 30, 30)
    ]


def test_retry_after_the_server_was_down_then_never_twice(smtp_server: SmtpFactory) -> None:
    port = free_port()
    sink = Sink()
    sent = InMemorySentWeeks()
    recipients = Recipients(everyone=("ops@example.com",))
    sender = make_sender(port, sent, recipients)

    (first,) = sender.tick(MONDAY_9)  # nobody listens on the port yet
    assert first.status == "failed" and first.week == W48
    assert first.retry_at == MONDAY_9 + timedelta(minutes=5)
    state = sent.failure_state(W48, EVERYONE)
    assert state is not None and state.count == 1 and PASSWORD not in state.last_error

    smtp_server(sink, port=port, mode="plain")
    (waiting,) = sender.tick(MONDAY_9 + timedelta(minutes=4))  # inside the backoff
    assert waiting.status == "waiting" and sink.messages == []

    (ok,) = sender.tick(MONDAY_9 + timedelta(minutes=5))
    assert ok.status == "sent"
    assert len(sink.messages) == 1 and sink.messages[0].rcpt_tos == ["ops@example.com"]
    assert sent.was_sent(W48, EVERYONE) and sent.failure_state(W48, EVERYONE) is None

    (again,) = sender.tick(MONDAY_9 + timedelta(hours=2))
    assert again.status == "already-sent"
    # A restarted daemon shares the store's bookkeeping: still nothing more.
    restarted = make_sender(port, sent, recipients)
    assert [o.status for o in restarted.tick(MONDAY_9 + timedelta(hours=3))] == ["already-sent"]
    assert len(sink.messages) == 1


def test_backoff_grows_while_the_server_stays_down() -> None:
    sent = InMemorySentWeeks()
    sender = make_sender(free_port(), sent, Recipients(everyone=("ops@example.com",)))
    now = MONDAY_9
    retry_at = []
    for _ in range(3):
        (o,) = sender.tick(now)
        assert o.status == "failed" and o.retry_at is not None
        retry_at.append(o.retry_at - now)
        now = o.retry_at
    assert retry_at == [timedelta(minutes=5), timedelta(minutes=10), timedelta(minutes=20)]


def test_one_report_per_team_with_that_teams_figures(smtp_server: SmtpFactory) -> None:
    sink = Sink()
    server = smtp_server(sink, mode="plain")
    recipients = Recipients(
        everyone=("ops@example.com",),
        teams={"nlp": ("nlp@example.com",), "vision": ()},  # no addresses: no report
    )
    outcomes = make_sender(server.port, InMemorySentWeeks(), recipients).tick(MONDAY_9)
    assert [(o.scope, o.status) for o in outcomes] == [
        (EVERYONE, "sent"), (team_scope("nlp"), "sent"),
    ]
    by_rcpt = {m.rcpt_tos[0]: m for m in sink.messages}
    parse = BytesParser(policy=policy.default).parsebytes
    ops, nlp = parse(by_rcpt["ops@example.com"].content), parse(by_rcpt["nlp@example.com"].content)
    assert "$780.67 spent" in ops["Subject"] and "(everyone)" in ops["Subject"]
    # nlp: j1 $708 + j2 $10; on-demand $128 + $660 + $28 = $816; saved $98 (12.0 %)
    assert "(team nlp): $718.00 spent, $98.00 (12.0%) saved" in nlp["Subject"]
    nlp_text = nlp.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "mistral-ft" not in nlp_text and "llama-ft" in nlp_text
    assert "89.8%" in nlp_text  # nlp's weekly budget burn: 718 / 800
