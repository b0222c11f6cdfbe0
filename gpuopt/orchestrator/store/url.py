"""Which database to open; light (no SQLAlchemy import) so a fresh machine stays fast."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_url(url: str | None = None) -> str:
    """``url``, else GPUOPT_DATABASE_URL, else the SQLite file in the data directory."""
    if url:
        return url
    env = os.environ.get("GPUOPT_DATABASE_URL")
    if env:
        return env
    from gpuopt.orchestrator.paths import default_sqlite_path

    return f"sqlite:///{default_sqlite_path()}"


def sqlite_file(url: str) -> Path | None:
    """The file of a file-backed SQLite URL (sqlite:///rel or sqlite:////abs), else None."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+", 1)[0] != "sqlite" or not rest.startswith("/"):
        return None
    db = rest[1:].split("?", 1)[0]
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db).expanduser()


# Query parameters that carry a credential (libpq's password / sslpassword, and the
# spellings drivers and proxies accept); their values are masked like the password.
SECRET_QUERY_KEYS = frozenset({"password", "passwd", "pwd", "sslpassword", "secret", "token",
                               "access_token", "api_key", "apikey"})


def shown_url(url: str) -> str:
    """The URL with its password -- in the authority or as a ``?password=`` query
    parameter -- replaced by *** (for messages, status and config output)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
        marker = "gpuopt-masked-value"  # rendering would escape *** itself
        query = {k: (marker if k.lower() in SECRET_QUERY_KEYS else v)
                 for k, v in parsed.query.items()}
        shown = parsed.set(query=query).render_as_string(hide_password=True)
        return shown.replace(marker, "***")
    except (ArgumentError, ValueError, TypeError):  # not a URL; or e.g. a bad port
        scheme, sep, rest = url.partition("://")
        return f"{scheme}://***" if sep and ("@" in rest or "?" in rest) else url


def libpq_url(sqlalchemy_url: str) -> str:
    """postgresql+psycopg://... -> postgresql://... (what psycopg.connect takes)."""
    from sqlalchemy.engine import make_url

    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(
        hide_password=False)


def postgres_unreachable(url: str, timeout_s: int = 10) -> str | None:
    """None when the PostgreSQL server of ``url`` accepts a connection (opened and closed
    at once), else why not (psycopg's OperationalError, as text)."""
    import psycopg

    try:
        with psycopg.connect(libpq_url(url), connect_timeout=timeout_s):
            return None
    except psycopg.OperationalError as err:
        return str(err)
