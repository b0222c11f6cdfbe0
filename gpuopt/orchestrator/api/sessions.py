"""The dashboard's session cookie and CSRF tokens, signed with the server's secret
(HMAC-SHA256; the secret is random per server start, so a restart signs everyone out).

The cookie holds the user's name, an expiry and the first 16 hex digits of the SHA-256
of its token (never the token): a request is the user's only while that user is live
and still holds that token, so a revoked (or re-issued) token ends its sessions at once.
It is HttpOnly, SameSite=Strict, Secure over HTTPS. Every form carries a CSRF token:
the HMAC of the session cookie under another label."""

from __future__ import annotations

import hashlib
import hmac
import time

COOKIE = "gpuopt_session"
LIFETIME_S = 12 * 3600
HASH_PREFIX = 16


def _sign(secret: bytes, label: str, value: str) -> str:
    return hmac.new(secret, f"{label}:{value}".encode(), hashlib.sha256).hexdigest()


def make_session(secret: bytes, name: str, token_sha256: str, now: float | None = None
                 ) -> str:
    expires = int((now if now is not None else time.time()) + LIFETIME_S)
    body = f"{name}|{expires}|{token_sha256[:HASH_PREFIX]}"
    return f"{body}|{_sign(secret, 'session', body)}"


def read_session(secret: bytes, cookie: str | None, now: float | None = None
                 ) -> tuple[str, str] | None:
    """(user name, token hash prefix) of a valid, unexpired cookie, else None."""
    if not cookie or len(cookie) > 512:
        return None
    body, _, mac = cookie.rpartition("|")
    if not hmac.compare_digest(mac, _sign(secret, "session", body)):
        return None
    parts = body.split("|")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    if int(parts[1]) < (now if now is not None else time.time()):
        return None
    return parts[0], parts[2]


def csrf_token(secret: bytes, cookie: str) -> str:
    return _sign(secret, "csrf", cookie)


def csrf_ok(secret: bytes, cookie: str | None, given: str | None) -> bool:
    return bool(cookie and given) and hmac.compare_digest(
        csrf_token(secret, cookie or ""), given or "")
