"""Fixtures for the report tests: a real SMTP server on loopback (aiosmtpd), TLS material."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.net import free_port, write_self_signed

USER, PASSWORD = "reporter", "s3cret-pw"


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes


@dataclass
class Sink:
    messages: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content)
        )
        return "250 OK"

    def authenticator(self, server: Any, session: Any, envelope: Any, mechanism: str,
                      auth_data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        if (
            isinstance(auth_data, LoginPassword)
            and auth_data.login == USER.encode()
            and auth_data.password == PASSWORD.encode()
        ):
            self.logins.append(USER)
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)


@dataclass
class TlsFiles:
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A self-signed certificate for 127.0.0.1 / localhost."""
    return TlsFiles(*write_self_signed(tmp_path_factory.mktemp("tls")))



SmtpFactory = Callable[..., Any]


@pytest.fixture
def smtp_server() -> Iterator[SmtpFactory]:
    """start(sink, port=None, mode="plain"|"starttls"|"tls", tls=TlsFiles) -> Controller."""
    from aiosmtpd.controller import Controller

    started: list[Any] = []

    def start(sink: Sink, *, port: int | None = None, mode: str = "plain",
              tls: TlsFiles | None = None) -> Any:
        kwargs: dict[str, Any] = {
            "authenticator": sink.authenticator,
            "auth_required": True,
            # aiosmtpd only knows of TLS it negotiated itself (STARTTLS); with implicit TLS
            # the whole connection is encrypted but AUTH would not be advertised otherwise.
            "auth_require_tls": mode == "starttls",
        }
        if mode == "starttls":
            assert tls is not None
            kwargs.update(tls_context=tls.server_context(), require_starttls=True)
        elif mode == "tls":
            assert tls is not None
            kwargs.update(ssl_context=tls.server_context())
        controller = Controller(sink, hostname="127.0.0.1", port=port or free_port(), **kwargs)
        controller.start()
        started.append(controller)
        return controller

    yield start
    for controller in started:
        with contextlib.suppress(AssertionError):  # already stopped by the test
            controller.stop()
