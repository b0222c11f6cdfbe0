"""Issue 26.7: what the store holds (a job an older version accepted with ESC sequences in
its name, owner and team; a cloud's error text; an event) reaches the terminal and the
report escaped: `jobs`, `status`, `daemon status`, the text report, the e-mail's subject,
text and HTML parts. Before, `\\x1b]0;pwned\\x07\\x1b[2J` retitled the terminal and
cleared the screen."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from gpuopt.orchestrator.cli.app import build_app

PWNED = "\x1b]0;pwned\x07\x1b[2J"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J"
# rich drops BEL, BS, VT, FF and CR from the text it prints (rich.control); the rest of a
# line printed outside a table is escaped by the console
SHOWN_LINE = "\\x1b]0;pwned\\x1b[2J"
NOW = datetime(2026, 11, 24, 9, tzinfo=UTC)
CHARTS = {"daily-spend": b"png", "vs-on-demand": b"png"}
UNSAFE = ("\x1b", "\x07", "\u202e", "\x9b")


def _safe(text: str) -> None:
    for ch in UNSAFE:
        assert ch not in text, f"{ch!r} reached the output"


@pytest.fixture
def hostile_job() -> str:
    """A job row as an older version stored it (no validation of names yet)."""
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import add_event
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

    store = open_store()
    with store.transaction() as session:
        session.add(JobRow(id="old-job-abc123", name=f"train{PWNED}", owner=f"eve{PWNED}",
                           team="ml\u202egnp", status="failed", spec_yaml="run: x",
                           submitted_at=NOW, executor="skypilot", plan_json="{}",
                           updated_at=NOW, finished_at=NOW,
                           last_error=f"launch failed: {PWNED}\x9b31m"))
        session.flush()
        session.add(AttemptRow(job_id="old-job-abc123", number=1,
                               cluster_name="old-job-abc123-1", cloud="aws",
                               region=f"us-east-1{PWNED}", instance_type=f"g6.xl{PWNED}",
                               gpu="L4", gpu_count=1, market="spot",
                               price_per_hour_micros=270900, status="ended", created_at=NOW,
                               started_at=NOW, ended_at=NOW, end_reason="failed"))
        add_event(session, "old-job-abc123", NOW, "failed", f"program said {PWNED}")
    store.close()
    return "old-job-abc123"


def _run(*args: str) -> str:
    result = CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "80"},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_jobs_table_escapes_names_owners_and_teams(hostile_job: str) -> None:
    out = _run("jobs", "--wide")
    _safe(out)
    assert f"train{SHOWN}" in out and f"eve{SHOWN}" in out and "ml\\u202egnp" in out


def test_status_escapes_every_stored_text(hostile_job: str) -> None:
    out = _run("status", hostile_job, "--wide")
    _safe(out)
    assert f"train{SHOWN_LINE}" in out and f"g6.xl{SHOWN}" in out  # line; table cell
    assert f"program said {SHOWN_LINE}" in out and "\\x9b31m" in out


def test_table_cells_are_text_not_markup() -> None:
    import io

    from gpuopt.orchestrator.cli.console import safe_console
    from gpuopt.orchestrator.cli.tables import ID, Col, print_table

    buf = io.StringIO()
    console = safe_console(file=buf, width=80, force_terminal=True, color_system="standard")
    print_table(console, [Col("name", ID), Col("owner")],
                [["[link=https://evil.example]click[/link]", f"a{PWNED}"]])
    text = buf.getvalue()
    assert "[link=https://evil.example]click[/link]" in text and SHOWN in text
    assert "\x1b]8;" not in text and "\x1b]0;" not in text  # no hyperlink, no retitle
    assert "\x1b[1m" in text  # rich's own styling (the bold header) still reaches it


def test_console_escapes_what_any_caller_prints() -> None:
    import io

    from rich.text import Text

    from gpuopt.orchestrator.cli.console import safe_console

    buf = io.StringIO()
    console = safe_console(file=buf, width=80, force_terminal=True, color_system="standard",
                           highlight=False)
    console.print(Text(f"plain {PWNED}", style="red"))
    console.print(f"markup [bold]x[/] {PWNED}\nsecond line")
    text = buf.getvalue()
    assert text.count("\x1b]") == 0 and "\x1b[2J" not in text
    assert text.count(SHOWN_LINE) == 2
    assert "\nsecond line" in text and "\x1b[31m" in text


def test_daemon_status_escapes_a_clouds_error_text() -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.daemon_state import record_poll

    store = open_store()
    record_poll(store, "aws", status="error", error=f"HTTP 500: {PWNED}", at=NOW)
    store.close()
    result = CliRunner().invoke(build_app(), ["daemon", "status"], catch_exceptions=False)
    _safe(result.output)
    assert f"HTTP 500: {SHOWN}" in result.output


def _hostile_report():  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from gpuopt.orchestrator.report.service import load_report
    from gpuopt.orchestrator.report.weeks import IsoWeek
    from tests.orchestrator.report.ledger import AS_OF, ledger

    attempts, jobs = ledger()
    attempts = [replace(a, job_name=a.job_name + PWNED, owner=f"{a.owner}{PWNED}")
                if a.job_id == "j1" else a for a in attempts]
    jobs = [replace(j, name=j.name + PWNED, owner=f"{j.owner}{PWNED}", team=f"{j.team}\u202e")
            if j.job_id == "j1" else j for j in jobs]
    from zoneinfo import ZoneInfo

    return load_report(lambda _s, _e: (attempts, jobs), IsoWeek.parse("2026-W48"),
                       ZoneInfo("UTC"), as_of=AS_OF, owner=None, team=None,
                       team_budgets={"nlp": Decimal(1000)})


def test_text_report_and_every_mail_part_escape_stored_names() -> None:
    from gpuopt.orchestrator.report.message import build_message
    from gpuopt.orchestrator.report.render_text import render_text

    report = _hostile_report()
    text = render_text(report)
    _safe(text)
    assert f"llama-ft{SHOWN}" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    msg = build_message(report, sender="gpuopt@example.com", recipients=["a@example.com"],
                        charts=CHARTS, sent_at=NOW)
    plain = msg.get_body(("plain",))
    html = msg.get_body(("html",))
    assert plain is not None and html is not None
    _safe(plain.get_content())
    _safe(html.get_content())
    assert f"llama-ft{SHOWN}" in plain.get_content()


def test_a_crlf_team_scope_makes_a_one_line_subject() -> None:
    from dataclasses import replace

    from gpuopt.orchestrator.report.message import build_message

    report = replace(_hostile_report(), team="nlp\r\nBcc: everyone@example.com")
    msg = build_message(report, sender="gpuopt@example.com", recipients=["a@example.com"],
                        charts=CHARTS, sent_at=NOW)
    raw = msg.as_bytes()
    assert b"\r\nBcc:" not in raw and b"\nBcc:" not in raw
    assert "nlp\\x0d\\x0aBcc" in str(msg["Subject"])
