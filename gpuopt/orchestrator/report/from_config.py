"""The report's settings from gpuopt's configuration (orchestrator.config.Settings).

[report] recipients maps a team to the addresses of that team's report; the key
``everyone`` (or ``*``) receives the report over all teams. Team budgets are read from
``[report] team_budgets`` (USD per week).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import time
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.sender import Recipients, ReportSender, Schedule, SentWeeks
from gpuopt.orchestrator.report.smtp import SecretLike, SmtpMailer, SmtpSettings

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings

EVERYONE_KEYS = ("everyone", "*")


def report_timezone(settings: Settings) -> ZoneInfo:
    return ZoneInfo(settings.report.timezone)


def recipients(settings: Settings) -> Recipients:
    everyone: list[str] = []
    teams: dict[str, tuple[str, ...]] = {}
    for key, addresses in settings.report.recipients.items():
        if key in EVERYONE_KEYS:
            everyone += addresses
        else:
            teams[key] = tuple(addresses)
    return Recipients(everyone=tuple(everyone), teams=MappingProxyType(teams))


def team_budgets(settings: Settings) -> Mapping[str, Decimal]:
    raw = settings.report.team_budgets
    return MappingProxyType({team: Decimal(str(v)) for team, v in raw.items()})


def schedule(settings: Settings) -> Schedule:
    hh, mm = settings.report.time.split(":")
    return Schedule(report_timezone(settings), settings.report.weekday, time(int(hh), int(mm)))


def smtp_settings(settings: Settings) -> SmtpSettings:
    smtp = settings.smtp
    return SmtpSettings(
        host=smtp.host, port=smtp.port, security=str(smtp.security.value),
        username=smtp.username,
    )


def mailer(settings: Settings) -> Callable[..., None]:
    """An SmtpMailer whose password is read from the settings at each send."""

    def password() -> SecretLike | None:
        return settings.smtp.password

    return SmtpMailer(smtp_settings(settings), password)


def report_sender(settings: Settings, sent: SentWeeks) -> ReportSender:
    """The daemon's sender: ``sender.tick(now)`` on every tick (cheap when nothing is due).

    ``sent`` is the store's SentWeeks implementation (a table keyed by week and scope).
    """
    from gpuopt.orchestrator.report.source import store_loader

    return ReportSender(
        loader=store_loader(settings.database.url),
        mailer=mailer(settings),
        sent=sent,
        recipients=recipients(settings),
        schedule=schedule(settings),
        sender_address=settings.report.from_address,
        team_budgets=team_budgets(settings),
    )
