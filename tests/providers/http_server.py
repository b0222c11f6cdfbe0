"""A local plain-HTTP JSON server for the REST/GraphQL adapters' tests (GET and POST).

The handler sees each request (path, query, headers, decoded JSON body) and answers with a
:class:`Reply`; numbers stay as written in the recorded payload.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any = None


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Seen], Reply]


def queue(*replies: Reply, then: Handler) -> Handler:
    """Answer with ``replies`` first (throttling, errors), then with ``then``."""
    pending = list(replies)

    def handle(req: Seen) -> Reply:
        return pending.pop(0) if pending else then(req)

    return handle


@contextmanager
def serve(handler: Handler) -> Iterator[tuple[str, list[Seen]]]:
    seen: list[Seen] = []

    class _H(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            req = Seen(method, parts.path, parse_qs(parts.query), dict(self.headers.items()),
                       json.loads(raw) if raw else None)
            seen.append(req)
            reply = handler(req)
            body = b"" if reply.body is None else (
                reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body)
                .encode())
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def record_retry_sleeps(monkeypatch: Any) -> list[float]:
    """urllib3's Retry sleeps (Retry-After or backoff) recorded instead of slept."""
    from urllib3.util.retry import Retry

    slept: list[float] = []

    def after(self: Retry, response: Any = None) -> bool:
        value = self.get_retry_after(response) if response is not None else None
        if value is None:
            return False
        slept.append(value)
        return True

    monkeypatch.setattr(Retry, "sleep_for_retry", after)
    monkeypatch.setattr(Retry, "_sleep_backoff", lambda self: slept.append(self.get_backoff_time()))
    return slept
