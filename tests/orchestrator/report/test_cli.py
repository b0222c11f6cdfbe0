"""`gpuopt report` with an injected ledger (the store's ledger tables come later)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpuopt.orchestrator.cli import report_cmd
from tests.orchestrator.report.conftest import PASSWORD, USER, Sink, SmtpFactory
from tests.orchestrator.report.ledger import AS_OF, loader

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


def app() -> typer.Typer:
    a = typer.Typer()

    @a.callback()
    def _root() -> None:
        """gpuopt (test)"""

    report_cmd.register(a, loader=loader, clock=lambda: AS_OF)
    return a


def run(*args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(app(), ["report", *args], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_default_week_is_the_last_full_week_as_text() -> None:
    out = run()
    assert "2026-W48" in out and "$780.67" in out


def test_json_for_a_team_in_another_zone() -> None:
    data = json.loads(run("--format", "json", "--team", "vision", "--week", "2026-W48"))
    assert data["scope"] == {"owner": None, "team": "vision"}
    assert data["summary"]["spend"] == "62.666666"
    data = json.loads(run("--format", "json", env={"GPUOPT_REPORT_TIMEZONE":
                                                   "America/Los_Angeles"}))
    assert data["timezone"] == "America/Los_Angeles"
    assert data["summary"]["spend"] == "643.666666"


def test_owner_filter_and_out_file(tmp_path: Path) -> None:
    target = tmp_path / "alice.txt"
    run("--owner", "alice", "--out", str(target))
    text = target.read_text()
    assert "Scope: owner alice" in text and "$708.00" in text and "embed-batch" not in text


def test_html_out_writes_the_charts_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "week.html"
    run("--format", "html", "--out", str(target))
    html = target.read_text()
    for name in ("week-daily-spend.png", "week-vs-on-demand.png"):
        assert f'src="{name}"' in html
        assert (tmp_path / name).read_bytes().startswith(PNG_MAGIC)


def test_html_to_stdout_is_self_contained() -> None:
    out = run("--format", "html")
    assert out.count('src="data:image/png;base64,') == 2


def test_bad_week_is_a_user_error() -> None:
    from gpuopt.core.errors import UserError

    with pytest.raises(UserError, match="2026-W48") as err:
        CliRunner().invoke(app(), ["report", "--week", "48"], catch_exceptions=False)
    assert err.value.exit_code == 2  # issue 14: a bad --week exited 1, other bad input 2


def test_email_now_through_the_configured_smtp(smtp_server: SmtpFactory) -> None:
    sink = Sink()
    server = smtp_server(sink, mode="plain")
    env = {
        "GPUOPT_SMTP_HOST": "127.0.0.1",
        "GPUOPT_SMTP_PORT": str(server.port),
        "GPUOPT_SMTP_SECURITY": "none",
        "GPUOPT_SMTP_USERNAME": USER,
        "GPUOPT_SMTP_PASSWORD": PASSWORD,
        "GPUOPT_REPORT_FROM_ADDRESS": "gpuopt@example.com",
        "GPUOPT_REPORT_RECIPIENTS": json.dumps(
            {"everyone": ["ops@example.com"], "nlp": ["nlp@example.com"]}
        ),
    }
    result = CliRunner().invoke(app(), ["report", "--team", "nlp", "--email"], env=env,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert PASSWORD not in result.output
    (msg,) = sink.messages
    assert msg.rcpt_tos == ["nlp@example.com"] and sink.logins == [USER]
    assert b"$718.00" in msg.content
    # recorded where the daemon's weekly sender looks, so it does not send the week again
    from gpuopt.orchestrator.report.weeks import IsoWeek
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.report_sends import StoreSentWeeks

    store = open_store()
    try:
        sent = StoreSentWeeks(store)
        assert sent.was_sent(IsoWeek.parse("2026-W48"), "team:nlp")
        assert not sent.was_sent(IsoWeek.parse("2026-W48"), "everyone")
    finally:
        store.close()
    again = CliRunner().invoke(app(), ["report", "--team", "nlp", "--email"], env=env,
                               catch_exceptions=False)
    assert again.exit_code == 0 and "sent before" in again.output
    assert len(sink.messages) == 2  # asked explicitly: sent again
    # an owner's report is none of the daemon's scopes: nothing recorded for "everyone"
    mine = CliRunner().invoke(app(), ["report", "--owner", "alice", "--email"], env=env,
                              catch_exceptions=False)
    assert mine.exit_code == 0 and len(sink.messages) == 3
    store = open_store()
    try:
        assert not StoreSentWeeks(store).was_sent(IsoWeek.parse("2026-W48"), "everyone")
    finally:
        store.close()


def test_email_without_recipients_says_what_to_set() -> None:
    """Issue 29.8: a user error (exit 2), raised before any of the report is printed."""
    from gpuopt.core.errors import UserError

    result = CliRunner().invoke(app(), ["report", "--email"])
    assert isinstance(result.exception, UserError), result.output
    assert result.exception.exit_code == 2
    assert "[report] recipients" in str(result.exception)
    assert result.stdout == ""
    team = CliRunner().invoke(app(), ["report", "--email", "--team", "nlp"])
    assert isinstance(team.exception, UserError) and team.exception.exit_code == 2
    assert '[report] recipients."nlp"' in str(team.exception) and team.stdout == ""


def test_report_sender_from_configuration() -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.report.from_config import report_sender
    from gpuopt.orchestrator.report.sender import EVERYONE, team_scope
    from tests.orchestrator.report.sent_weeks import InMemorySentWeeks

    settings = load_config(env={
        "GPUOPT_REPORT_TIMEZONE": "America/Los_Angeles",
        "GPUOPT_REPORT_RECIPIENTS": json.dumps({"*": ["ops@example.com"], "nlp": ["n@x.io"]}),
        "GPUOPT_SMTP_PASSWORD": PASSWORD,
    })
    sender = report_sender(settings, InMemorySentWeeks())
    assert [s for s, _, _ in sender.recipients.scopes()] == [EVERYONE, team_scope("nlp")]
    assert sender.schedule.tz.key == "America/Los_Angeles"
    assert PASSWORD not in repr(sender.mailer)
