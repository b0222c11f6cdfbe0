"""A tiny local HTTP server that answers the Google REST clients with recorded payloads.

Routes are keyed by (path, pageToken). Each route holds a queue of (status, body)
answers: every request takes the next one, and the last one keeps answering. The
server records every request so tests can assert what the SDK asked for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PAYLOADS = Path(__file__).parent / "payloads"
SKUS_PATH = "/v1/services/6F81-5844-456A/skus"
PROJECT = "test-project"
MACHINE_TYPES_PATH = f"/compute/v1/projects/{PROJECT}/aggregated/machineTypes"
ACCELERATOR_TYPES_PATH = f"/compute/v1/projects/{PROJECT}/aggregated/acceleratorTypes"

Answer = tuple[int, dict[str, Any]]


def payload(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / name).read_text())
    return data


def google_error(code: int, status: str, message: str) -> Answer:
    """An error body as Google's REST APIs send it."""
    return code, {"error": {"code": code, "message": message, "status": status}}


class FakeGoogleApi:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Answer]] = {}
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self._lock = threading.Lock()
        self.url = ""

    def route(self, path: str, *answers: Answer, page_token: str = "") -> None:
        self.routes[(path, page_token)] = list(answers)

    def requests_to(self, path: str) -> list[dict[str, list[str]]]:
        return [q for p, q in self.requests if p == path]

    def answer(self, path: str, query: dict[str, list[str]]) -> Answer:
        with self._lock:
            self.requests.append((path, query))
            queue = self.routes.get((path, query.get("pageToken", [""])[0]))
            if not queue:
                return google_error(404, "NOT_FOUND", f"no route for {path}")
            return queue.pop(0) if len(queue) > 1 else queue[0]


def _handler(api: FakeGoogleApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            status, body = api.answer(url.path, parse_qs(url.query))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve() -> Iterator[FakeGoogleApi]:
    api = FakeGoogleApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def route_recorded(api: FakeGoogleApi) -> None:
    """The happy path: three SKU pages, two machine-type pages, one accelerator page."""
    p1, p2, p3 = (payload(f"skus_page{i}.json") for i in (1, 2, 3))
    api.route(SKUS_PATH, (200, p1))
    api.route(SKUS_PATH, (200, p2), page_token=p1["nextPageToken"])
    api.route(SKUS_PATH, (200, p3), page_token=p2["nextPageToken"])
    m1, m2 = payload("machine_types_page1.json"), payload("machine_types_page2.json")
    api.route(MACHINE_TYPES_PATH, (200, m1))
    api.route(MACHINE_TYPES_PATH, (200, m2), page_token=m1["nextPageToken"])
    api.route(ACCELERATOR_TYPES_PATH, (200, payload("accelerator_types.json")))
