"""`gpuopt report`: the weekly cost report, printed, saved, or e-mailed now."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuopt.orchestrator.cli.config_cmd import ConfigOption

if TYPE_CHECKING:
    from email.message import EmailMessage

    from gpuopt.orchestrator.config import Settings
    from gpuopt.orchestrator.report.model import WeeklyReport
    from gpuopt.orchestrator.report.service import LedgerLoader
    from gpuopt.orchestrator.report.weeks import IsoWeek


class ReportFormat(StrEnum):
    TEXT = "text"
    HTML = "html"
    JSON = "json"


def register(
    app: typer.Typer,
    *,
    loader: LedgerLoader | None = None,
    clock: Callable[[], datetime] | None = None,
    mailer: Callable[[EmailMessage], None] | None = None,
) -> None:
    """Add `report`. ``loader``/``clock``/``mailer`` replace the store, the clock and SMTP
    (tests, demos); by default they come from the configuration."""

    @app.command("report")
    def report(
        week: Annotated[
            str | None,
            typer.Option("--week", help="ISO week, e.g. 2026-W48 (default: the last full week)."),
        ] = None,
        owner: Annotated[
            str | None, typer.Option("--owner", help="Only this owner's jobs.")
        ] = None,
        team: Annotated[str | None, typer.Option("--team", help="Only this team's jobs.")] = None,
        fmt: Annotated[
            ReportFormat, typer.Option("--format", help="text, html or json.")
        ] = ReportFormat.TEXT,
        out: Annotated[
            Path | None,
            typer.Option("--out", help="Write to FILE (html: its PNG charts go beside it)."),
        ] = None,
        email: Annotated[
            bool, typer.Option("--email", help="E-mail it now to the scope's recipients (the "
                               "daemon then does not send that week's report again).")
        ] = False,
        config: ConfigOption = None,
    ) -> None:
        """Spend, savings against on-demand, preemptions and budgets for one ISO week.

        Example: gpuopt report --week 2026-W48 --team nlp --format html --out report.html
        """
        from datetime import UTC

        from gpuopt.orchestrator.cli.remote import remote_or_none

        if (remote := remote_or_none()) is not None and loader is None:
            from gpuopt.orchestrator.cli import remote_cmds

            remote_cmds.report(remote, week, owner, team, fmt.value, out, email)
            return
        from gpuopt.orchestrator.config import load_config
        from gpuopt.orchestrator.report import from_config
        from gpuopt.orchestrator.report.service import load_report
        from gpuopt.orchestrator.report.source import store_loader
        from gpuopt.orchestrator.report.weeks import IsoWeek

        settings = load_config(config)
        tz = from_config.report_timezone(settings)
        now = clock() if clock is not None else datetime.now(UTC)
        the_week = _parse_week(week) if week else IsoWeek.containing(now, tz).previous()
        # Who gets it is checked before anything is loaded or printed (a user error: 2).
        send_to = _recipients(settings, team) if email else None
        result = load_report(
            loader or store_loader(settings.database.url), the_week, tz, as_of=now,
            owner=owner, team=team, team_budgets=from_config.team_budgets(settings),
        )
        _output(result, fmt, out)
        if send_to is not None:
            _email(result, settings, mailer, now, send_to)


def _parse_week(text: str) -> IsoWeek:
    """--week's value; a bad one is bad input (exit 2), like every other option's."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.report.weeks import IsoWeek

    try:
        return IsoWeek.parse(text)
    except UserError as err:
        raise UserError(f"--week: {err}", exit_code=2) from None


def _output(result: WeeklyReport, fmt: ReportFormat, out: Path | None) -> None:
    if fmt is ReportFormat.HTML:
        from gpuopt.orchestrator.report.files import self_contained_html, write_html_report

        if out is not None:
            paths = write_html_report(result, out)
            typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
            return
        typer.echo(self_contained_html(result))
        return
    if fmt is ReportFormat.JSON:
        from gpuopt.orchestrator.report.render_json import render_json

        text = render_json(result)
    else:
        from gpuopt.orchestrator.report.render_text import render_text

        text = render_text(result)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)
    else:
        typer.echo(text, nl=False)


def _recipients(settings: Settings, team: str | None) -> tuple[tuple[str, ...], str]:
    """The addresses of the report's scope and the scope's name (the daemon's send
    bookkeeping); none configured is a user error, exit 2."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.report import from_config
    from gpuopt.orchestrator.report.sender import EVERYONE, team_scope

    recipients = from_config.recipients(settings)
    if team is not None:
        addresses = tuple(recipients.teams.get(team, ()))
        where = f'[report] recipients."{team}"'
        scope = team_scope(team)
    else:
        addresses = tuple(recipients.everyone)
        where = f"[report] recipients.{EVERYONE}"
        scope = EVERYONE
    if not addresses:
        raise UserError(f"--email: no recipients for this report: set {where} = "
                        "[\"you@example.com\"] in the configuration (docs/operations.md, "
                        "Email)", exit_code=2)
    return addresses, scope


def _email(
    result: WeeklyReport,
    settings: Settings,
    mailer: Callable[[EmailMessage], None] | None,
    now: datetime,
    send_to: tuple[tuple[str, ...], str],
) -> None:
    from gpuopt.orchestrator.report import from_config
    from gpuopt.orchestrator.report.message import build_message

    addresses, scope = send_to
    msg = build_message(
        result, sender=settings.report.from_address, recipients=addresses, sent_at=now
    )
    (mailer or from_config.mailer(settings))(msg)
    from gpuopt.core.safe_text import escape_text

    typer.echo(escape_text(f"sent {result.week} ({result.scope}) to {', '.join(addresses)}"),
               err=True)
    # An owner's report is none of the daemon's scopes; the others it must not send again.
    if result.owner is None and _mark_sent(settings, result, scope, now):
        typer.echo("(it had been sent before; sent again as asked)", err=True)


def _mark_sent(settings: Settings, result: WeeklyReport, scope: str, now: datetime) -> bool:
    """Record the send where the daemon's weekly sender looks; True if it was sent before."""
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.report_sends import StoreSentWeeks

    store = open_store(settings.database.url)
    try:
        sent = StoreSentWeeks(store)
        before = sent.was_sent(result.week, scope)
        sent.mark_sent(result.week, scope, now)
        return before
    finally:
        store.close()
