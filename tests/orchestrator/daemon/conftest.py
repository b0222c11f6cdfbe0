"""Daemon fixtures: a store on SQLite and on PostgreSQL (throwaway database per run, the
store tests' pattern), and helpers to run `gpuopt daemon` as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]



@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store import open_store

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
        "GPUOPT_API_ADDRESS": "127.0.0.1:0",  # the API on any free port
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
    return [sys.executable, "-m", "gpuopt.orchestrator.cli.app", *args]


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
