"""The report e-mail through a real SMTP server on loopback (aiosmtpd)."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from zoneinfo import ZoneInfo

import pytest

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.message import build_message
from gpuopt.orchestrator.report.smtp import ReportSendError, SmtpSettings, send_email
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.orchestrator.report.conftest import PASSWORD, USER, Sink, SmtpFactory, TlsFiles
from tests.orchestrator.report.ledger import AS_OF, TEAM_BUDGETS, ledger

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# The plain-loopback server requires AUTH without TLS on purpose; aiosmtpd warns about it.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


def message() -> EmailMessage:
    attempts, jobs = ledger()
    r = build_report(attempts, jobs, IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF,
                     team_budgets=TEAM_BUDGETS)
    return build_message(r, sender="gpuopt@example.com", recipients=["a@example.com",
                                                                    "b@example.com"])


def check_delivered(raw: bytes) -> None:
    """The structure and the figures of the delivered report."""
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(msg, EmailMessage)
    assert msg.get_content_type() == "multipart/alternative"
    text_part, related = msg.iter_parts()
    assert isinstance(text_part, EmailMessage) and isinstance(related, EmailMessage)
    assert text_part.get_content_type() == "text/plain"
    assert related.get_content_type() == "multipart/related"
    html_part, *images = related.iter_parts()
    assert isinstance(html_part, EmailMessage)
    assert html_part.get_content_type() == "text/html"
    assert len(images) == 2
    html = html_part.get_content()
    for image in images:
        assert isinstance(image, EmailMessage)
        assert image.get_content_type() == "image/png"
        assert image.get_content().startswith(PNG_MAGIC)
        cid = str(image["Content-ID"]).strip().strip("<>")
        assert f'src="cid:{cid}"' in html
    text = text_part.get_content()
    # Hand-computed: spend $780.666666, on-demand $979.466666, saved $198.80 (20.3 %),
    # one preemption wasting 4 GPU-hours.
    for figure in ("$780.67", "$979.47", "$198.80", "20.3%"):
        assert figure in text and figure in html
    assert "4.0 GPU-h wasted" in html
    assert "$780.67 spent, $198.80 (20.3%) saved" in msg["Subject"]
    assert msg["To"] == "a@example.com, b@example.com"


def test_plain_loopback_with_authentication(smtp_server: SmtpFactory) -> None:
    sink = Sink()
    server = smtp_server(sink, mode="plain")
    settings = SmtpSettings("127.0.0.1", server.port, security="none", username=USER)
    send_email(message(), settings, PASSWORD)
    (received,) = sink.messages
    assert sink.logins == [USER]
    assert received.rcpt_tos == ["a@example.com", "b@example.com"]
    check_delivered(received.content)


def test_starttls_with_authentication(smtp_server: SmtpFactory, tls_files: TlsFiles) -> None:
    sink = Sink()
    server = smtp_server(sink, mode="starttls", tls=tls_files)
    settings = SmtpSettings("127.0.0.1", server.port, security="starttls", username=USER,
                            ca_file=str(tls_files.cert))
    send_email(message(), settings, PASSWORD)
    assert sink.logins == [USER]
    check_delivered(sink.messages[0].content)


def test_implicit_tls_with_a_secret_password(smtp_server: SmtpFactory,
                                             tls_files: TlsFiles) -> None:
    from pydantic import SecretStr

    sink = Sink()
    server = smtp_server(sink, mode="tls", tls=tls_files)
    settings = SmtpSettings("127.0.0.1", server.port, security="tls", username=USER)
    send_email(message(), settings, SecretStr(PASSWORD), ssl_context=tls_files.client_context())
    check_delivered(sink.messages[0].content)


def test_untrusted_certificate_is_refused(smtp_server: SmtpFactory, tls_files: TlsFiles) -> None:
    sink = Sink()
    server = smtp_server(sink, mode="tls", tls=tls_files)
    settings = SmtpSettings("127.0.0.1", server.port, security="tls", username=USER)
    with pytest.raises(ReportSendError, match="could not send"):
        send_email(message(), settings, PASSWORD)  # system CAs do not know the test cert
    assert sink.messages == []


def test_wrong_password_is_reported_without_the_password(smtp_server: SmtpFactory) -> None:
    sink = Sink()
    server = smtp_server(sink, mode="plain")
    settings = SmtpSettings("127.0.0.1", server.port, security="none", username=USER)
    with pytest.raises(ReportSendError, match="refused the login") as info:
        send_email(message(), settings, "not-the-password")
    assert "not-the-password" not in str(info.value)
    assert sink.messages == []


def test_password_is_not_sent_in_clear_to_a_remote_host() -> None:
    settings = SmtpSettings("smtp.example.com", 25, security="none", username=USER)
    with pytest.raises(UserError, match="clear text"):
        send_email(message(), settings, PASSWORD)


def test_unknown_security_mode() -> None:
    with pytest.raises(UserError, match="starttls, tls, none"):
        SmtpSettings(security="ssl3")
