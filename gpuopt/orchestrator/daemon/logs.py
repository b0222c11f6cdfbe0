"""Daemon logging: plain text or one JSON object per line, credentials masked.

``setup_logging("json")`` installs a single stderr handler on the root logger (so each
record is written once) and keeps the SDKs' per-request logging out (QUIET_LOGGERS). Every
record's message goes through :func:`redact` (passwords in URLs and ``password=...``
pairs), so a database URL or an SMTP error never leaks a secret into the log.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from typing import TextIO

_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^:/@\s]+):[^@\s]+@")
_KEY_VALUE = re.compile(r"(?i)(?P<key>password|passwd|secret|token)(?P<sep>\s*[=:]\s*)[^\s,;&]+")
MASK = "***"
URLLIB3_POOL = "urllib3.connectionpool"  # where urllib3 logs each retry
# Libraries that log routine work at INFO: only their warnings reach the daemon's log.
# APScheduler logs every run; the cloud SDKs log every HTTP request (Azure's
# http_logging_policy: several lines of headers per request, on every poll).
QUIET_LOGGERS = (
    "apscheduler", "alembic",
    "azure", "azure.core.pipeline.policies.http_logging_policy", "azure.identity", "msal",
    "botocore", "boto3", "s3transfer", "urllib3", "google", "google.auth", "google.api_core",
    "grpc", "sky",
)
# LogRecord attributes that are not "extra" fields.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName",
}


def redact(text: str) -> str:
    """``text`` with URL passwords and ``password=...`` values replaced by ***."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    return _KEY_VALUE.sub(lambda m: f"{m.group('key')}{m.group('sep')}{MASK}", text)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts (UTC ISO 8601), level, logger, message, extras, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, int | float | bool | None) else redact(
                    str(value))
        if record.exc_info:
            out["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s",
                         datefmt="%Y-%m-%dT%H:%M:%SZ")
        self.converter = time.gmtime

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RetryFolder(logging.Filter):
    """urllib3's retry warnings ("Retrying (Retry(total=2, ...)) after connection broken
    by '...': /api/v0/bundles/?q=%7B...", ~430 characters each, the query URL-encoded)
    are counted per host instead of logged; each price poll then logs one INFO line per
    host it retried (``take``), without the query."""

    def __init__(self) -> None:
        super().__init__("urllib3")
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Retrying"):
            return True
        err = record.args[1] if isinstance(record.args, tuple) and len(record.args) > 1 else None
        host = (getattr(getattr(err, "conn", None), "host", None)
                or getattr(getattr(err, "pool", None), "host", None) or "a host")
        with self._lock:
            self._counts[(str(host), type(err).__name__ if err is not None else "error")] += 1
        return False

    def take(self) -> list[tuple[str, str, int]]:
        """(host, error kind, retries) since the last take, and forget them."""
        with self._lock:
            out = sorted((h, k, n) for (h, k), n in self._counts.items())
            self._counts.clear()
        return out


def retry_folder() -> RetryFolder | None:
    """The folder setup_logging installed on urllib3's connection-pool logger, if any."""
    for f in logging.getLogger(URLLIB3_POOL).filters:
        if isinstance(f, RetryFolder):
            return f
    return None


def log_folded_retries(log: logging.Logger, what: str) -> None:
    """One INFO line per host retried since the last call (see RetryFolder)."""
    folder = retry_folder()
    for host, kind, n in folder.take() if folder is not None else ():
        log.info("%s: %d connection retr%s to %s (%s)", what, n, "y" if n == 1 else "ies",
                 host, kind)


def setup_logging(fmt: str = "text", *, level: int = logging.INFO,
                  stream: TextIO | None = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    pool = logging.getLogger(URLLIB3_POOL)
    if retry_folder() is None:
        pool.addFilter(RetryFolder())
