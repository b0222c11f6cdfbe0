"""Sending through smtplib: STARTTLS, implicit TLS or plain, with optional authentication.

The password is handed in by the caller (from the environment or a password file via
the configuration's SecretStr) for the duration of one send: it is never stored on an
object that could be logged or pickled in clear, never put in an error message.
"""

from __future__ import annotations

import ipaddress
import smtplib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Protocol

from gpuopt.core.errors import UserError

SECURITY_MODES = ("starttls", "tls", "none")


class SecretLike(Protocol):
    def get_secret_value(self) -> str: ...


class ReportSendError(UserError):
    """The message could not be handed to the SMTP server (retryable by the sender)."""


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    host: str = "localhost"
    port: int = 587
    security: str = "starttls"  # starttls | tls (implicit, "SMTPS", port 465) | none
    username: str | None = None
    timeout_s: float = 30.0
    ca_file: str | None = None  # extra CA bundle to trust (a private relay's CA)

    def __post_init__(self) -> None:
        if self.security not in SECURITY_MODES:
            raise UserError(
                f"smtp security {self.security!r} is unknown: "
                f"use one of {', '.join(SECURITY_MODES)}"
            )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def send_email(
    msg: EmailMessage,
    settings: SmtpSettings,
    password: SecretLike | str | None = None,
    *,
    ssl_context: ssl.SSLContext | None = None,
) -> None:
    """Deliver ``msg`` to the relay; raises ReportSendError (without the password) on failure."""
    if settings.username and settings.security == "none" and not _is_loopback(settings.host):
        raise UserError(
            f"refusing to send the SMTP password in clear text to {settings.host}: "
            "set [smtp] security = \"starttls\" or \"tls\""
        )
    context = ssl_context or ssl.create_default_context(cafile=settings.ca_file)
    where = f"{settings.host}:{settings.port}"
    try:
        client: smtplib.SMTP
        if settings.security == "tls":
            client = smtplib.SMTP_SSL(
                settings.host, settings.port, timeout=settings.timeout_s, context=context
            )
        else:
            client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout_s)
        with client:
            client.ehlo()
            if settings.security == "starttls":
                client.starttls(context=context)
                client.ehlo()
            if settings.username:
                secret = password if isinstance(password, str | None) else (
                    password.get_secret_value()
                )
                if not secret:
                    raise UserError(
                        f"smtp username {settings.username!r} is set but no password was "
                        "given: set GPUOPT_SMTP_PASSWORD or [smtp] password_file"
                    )
                client.login(settings.username, secret)
            client.send_message(msg)
    except smtplib.SMTPAuthenticationError as err:
        raise ReportSendError(
            f"the SMTP server {where} refused the login of {settings.username!r} "
            f"({err.smtp_code}): check the username and password"
        ) from None
    except smtplib.SMTPRecipientsRefused as err:
        raise ReportSendError(
            f"the SMTP server {where} refused the recipients {sorted(err.recipients)}"
        ) from None
    except (smtplib.SMTPException, ssl.SSLError, OSError) as err:
        raise ReportSendError(f"could not send the report through {where}: {err}") from None


class SmtpMailer:
    """A ``send(msg)`` callable bound to settings; the password is fetched per send."""

    def __init__(
        self,
        settings: SmtpSettings,
        password: Callable[[], SecretLike | str | None] | None = None,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.settings = settings
        self._password = password
        self._ssl_context = ssl_context

    def __call__(self, msg: EmailMessage) -> None:
        secret = self._password() if self._password is not None else None
        send_email(msg, self.settings, secret, ssl_context=self._ssl_context)

    def __repr__(self) -> str:
        return f"SmtpMailer({self.settings!r})"
