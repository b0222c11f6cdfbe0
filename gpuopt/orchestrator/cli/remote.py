"""The remote CLI's connection: a team server's URL and a token, from GPUOPT_API_URL
and GPUOPT_API_TOKEN, else from ``login.json`` in the user's config directory (written
by ``gpuopt login URL``, mode 0600). Without either, every command works on the local
store as before.

HTTP with the standard library (urllib): a laptop needs no server extra. HTTPS is
verified against the system's CAs (SSL_CERT_FILE names another bundle, e.g. a team's
own CA). A refused request raises UserError with the server's message and the CLI's
exit code for it (the answer's ``exit_code``; 2 for other 4xx, 1 for 5xx)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode

from gpuopt.core.errors import UserError

LOGIN_FILE = "login.json"
TIMEOUT_S = 120.0


def login_file() -> Path:
    from gpuopt.orchestrator.paths import config_dir

    return config_dir() / LOGIN_FILE


@dataclass(frozen=True, slots=True)
class Remote:
    url: str  # no trailing slash
    token: str

    def __repr__(self) -> str:  # never the token
        return f"Remote({self.url!r})"

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                body: bytes | IO[bytes] | None = None, content_type: str | None = None,
                length: int | None = None, timeout: float | None = TIMEOUT_S) -> Any:
        """The open response (a file-like object); UserError for a refused request."""
        import urllib.error
        import urllib.request

        query = urlencode([(k, v) for k, v in (params or {}).items() if v is not None],
                          doseq=True)
        url = f"{self.url}/api/v1{path}" + (f"?{query}" if query else "")
        req = urllib.request.Request(url, data=body, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json, text/plain")
        if content_type:
            req.add_header("Content-Type", content_type)
        if length is not None:
            req.add_header("Content-Length", str(length))
        try:
            return urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as err:
            raise _refused(err.code, err.read()) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise UserError(f"cannot reach the gpuopt server at {self.url}: {reason} "
                            "(GPUOPT_API_URL / `gpuopt login`)", exit_code=1) from None

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        with self.request(method, path, **kwargs) as res:
            return json.loads(res.read().decode("utf-8"))

    def text(self, method: str, path: str, **kwargs: Any) -> str:
        with self.request(method, path, **kwargs) as res:
            return str(res.read().decode("utf-8"))

    def post_json(self, path: str, doc: Mapping[str, Any], **kwargs: Any) -> Any:
        data = json.dumps(doc).encode("utf-8")
        return self.request("POST", path, body=data, content_type="application/json",
                            length=len(data), **kwargs)

    def lines(self, path: str, params: Mapping[str, Any]) -> Iterator[str]:
        with self.request("GET", path, params=params, timeout=None) as res:
            for raw in res:
                yield raw.decode("utf-8", errors="replace").rstrip("\n")


def _refused(status: int, body: bytes) -> UserError:
    try:
        doc = json.loads(body.decode("utf-8"))
    except ValueError:
        doc = {}
    detail = doc.get("detail") if isinstance(doc, dict) else None
    if isinstance(detail, list):  # field errors: "loc: msg; ..."
        detail = "; ".join(f"{'.'.join(str(p) for p in d.get('loc', [])[1:])}: "
                           f"{d.get('msg')}" for d in detail if isinstance(d, dict))
    code = doc.get("exit_code") if isinstance(doc, dict) else None
    if not isinstance(code, int):
        code = 1 if status >= 500 else 2
    return UserError(f"{detail or f'the server answered {status}'} (HTTP {status})",
                     exit_code=code)


def remote_or_none() -> Remote | None:
    """The server to talk to, or None (local mode)."""
    url, token = os.environ.get("GPUOPT_API_URL"), os.environ.get("GPUOPT_API_TOKEN")
    if url or token:
        if not (url and token):
            raise UserError("set both GPUOPT_API_URL and GPUOPT_API_TOKEN (or neither, for "
                            "the local store)", exit_code=2)
        return Remote(_checked_url(url), token.strip())
    file = login_file()
    if not file.is_file():
        return None
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
        return Remote(_checked_url(str(doc["url"])), str(doc["token"]))
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise UserError(f"{file}: unreadable ({type(err).__name__}): run `gpuopt login URL` "
                        "again, or delete it for the local store", exit_code=2) from None


def _checked_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url) > 2000:
        raise UserError(f"server URL {url[:100]!r}: use http(s)://HOST:PORT", exit_code=2)
    return url


def save_login(url: str, token: str) -> Path:
    """Write ``login.json`` (0600, atomically) and return its path."""
    from gpuopt.orchestrator.paths import ensure_private_dir

    file = login_file()
    ensure_private_dir(file.parent)
    tmp = file.with_name(file.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": _checked_url(url), "token": token}, fh)
    os.chmod(tmp, 0o600)
    os.replace(tmp, file)
    return file
