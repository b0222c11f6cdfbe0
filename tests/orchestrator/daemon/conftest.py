"""Daemon fixtures: a store on SQLite and on PostgreSQL (throwaway database per run, the
store tests' pattern), and helpers to run `gpuopt daemon` as a real process."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PG_ADMIN = os.environ.get("GPUOPT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def daemon_pg_server() -> Iterator[str]:
    """A throwaway database gpuopt_daemon_<random>, dropped at the end of the session."""
    import sqlalchemy as sa

    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as err:  # pragma: no cover - depends on the machine
        admin.dispose()
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN} ({type(err).__name__})")
    name = f"gpuopt_daemon_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _reset_pg(url: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        conn.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture
def pg_url(daemon_pg_server: str) -> str:
    _reset_pg(daemon_pg_server)
    return daemon_pg_server


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'gpuopt.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    from orchestrator.store import open_store

    s = open_store(db_url)
    yield s
    s.close()


def daemon_env(home: Path, db_url: str, metrics_port: int, **extra: str) -> dict[str, str]:
    """Environment of a test daemon: its own home, short intervals, no cloud."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")}
    env.update({
        "GPUOPT_HOME": str(home),
        "GPUOPT_DATABASE_URL": db_url,
        "GPUOPT_CLOUDS_ENABLED": "[]",
        "GPUOPT_DAEMON_METRICS_ADDRESS": f"127.0.0.1:{metrics_port}",
        "GPUOPT_DAEMON_RECONCILE_INTERVAL": "1s",
        "GPUOPT_DAEMON_POLL_INTERVAL": "10m",
        "GPUOPT_DAEMON_LEASE_RENEW": "1s",
        "GPUOPT_DAEMON_LEASE_TTL": "3s",
        "AWS_EC2_METADATA_DISABLED": "true",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra)
    return env


def gpuopt_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli.app", *args]


def start_daemon(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as fh:
        return subprocess.Popen(
            gpuopt_cmd("daemon", "run", *args), env=env, stdout=fh, stderr=subprocess.STDOUT,
            cwd=REPO, start_new_session=True,
        )


def wait_for(cond: Callable[[], object], timeout: float, what: str, step: float = 0.2) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test started; killed (by pid) at the end if still alive."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(10)
