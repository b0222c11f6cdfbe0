"""A local HTTP server standing in for the Hugging Face Hub (reached through HF_ENDPOINT).

It answers the two requests huggingface_hub's hf_hub_download makes for a file,
``HEAD`` then ``GET {endpoint}/{repo_id}/resolve/{revision}/{filename}``, the way the Hub
does for a small (non-LFS) file: 200 with ``X-Repo-Commit`` (the commit the revision
resolves to), ``ETag`` (the file's git blob id, quoted) and ``Content-Length``; errors as
404/401 with the ``X-Error-Code`` header huggingface_hub maps to its exceptions
(RepoNotFound, EntryNotFound, GatedRepo). It serves the real config.json files in
tests/hub_configs (``org--name.json``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONFIGS = Path(__file__).parent / "hub_configs"
GATED = frozenset({"google/gemma-2-2b"})
TOKEN = "hf_standin_token"


def commit_of(repo_id: str) -> str:
    return hashlib.sha1(repo_id.encode()).hexdigest()


def blob_id(data: bytes) -> str:
    """git's blob id, which the Hub sends as the ETag of a non-LFS file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class StandInHub:
    url: str
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # method,
    # path, Authorization


def _handler(hub: StandInHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def _answer(self, send_body: bool) -> None:
            auth = self.headers.get("Authorization")
            hub.requests.append((self.command, self.path, auth))
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                return self._error(404, "RepoNotFound", "Repository not found")
            repo_id, revision, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
            path = CONFIGS / f"{repo_id.replace('/', '--')}.json"
            if not path.exists():
                return self._error(404, "RepoNotFound", "Repository not found")
            if repo_id in GATED and auth != f"Bearer {TOKEN}":
                return self._error(401, "GatedRepo", f"Access to model {repo_id} is "
                                   "restricted. You must have access to it and be "
                                   "authenticated to access it. Please log in.")
            if revision not in ("main", commit_of(repo_id)):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            if filename != "config.json":
                return self._error(404, "EntryNotFound", f"{filename} does not exist")
            data = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", f'"{blob_id(data)}"')
            self.send_header("X-Repo-Commit", commit_of(repo_id))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if send_body:
                self.wfile.write(data)

        def _error(self, status: int, code: str, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._answer(send_body=False)

        def do_GET(self) -> None:
            self._answer(send_body=True)

    return Handler


@contextmanager
def standin_hub() -> Iterator[StandInHub]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    hub = StandInHub(url=f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
