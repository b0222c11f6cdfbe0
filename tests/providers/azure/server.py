"""A local HTTPS server, started in a thread by a test, answering from a handler function.

HTTPS (a throwaway self-signed certificate trusted through REQUESTS_CA_BUNDLE) so the
Azure SDK's bearer-token policy runs unmodified: it refuses tokens over plain http.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any = None  # a POST's JSON body


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # a body sent as is (not JSON), instead of ``body``


Handler = Callable[[Seen, str], Reply]  # (request, base URL) -> reply


def _default(o: Any) -> Any:
    if isinstance(o, Decimal):
        return float(o)  # the API writes numbers as JSON floats (0.526, 0.0, 216000.0)
    raise TypeError(type(o))


@contextmanager
def serve(handler: Handler, cert: Path, key: Path) -> Iterator[tuple[str, list[Seen]]]:
    """Yield the server's base URL and the list of requests it has seen."""
    seen: list[Seen] = []
    base: list[str] = []

    class _H(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            self._answer(json.loads(self.rfile.read(size) or b"null"))

        def do_GET(self) -> None:
            self._answer(None)

        def _answer(self, posted: Any) -> None:
            parts = urlsplit(self.path)
            req = Seen(parts.path, parse_qs(parts.query), {k: v for k, v in self.headers.items()},
                       posted)
            seen.append(req)
            reply = handler(req, base[0])
            body = (reply.raw if reply.raw is not None else b"" if reply.body is None
                    else json.dumps(reply.body, default=_default).encode())
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    base.append(f"https://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield base[0], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
