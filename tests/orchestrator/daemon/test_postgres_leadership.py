"""Two real daemons on one PostgreSQL database: exactly one leader at a time; kill -9 the
leader and the stand-by takes over (well within a minute); SIGTERM hands over too."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.net import free_port
from tests.orchestrator.daemon.conftest import daemon_env, start_daemon, wait_for
from tests.orchestrator.daemon.test_process import healthy

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def roles(ports: dict[int, int]) -> dict[int, str]:
    """pid -> role reported by each live daemon's /healthz."""
    out = {}
    for pid, port in ports.items():
        body = healthy(port)
        if body is not None:
            out[pid] = str(body["role"])
    return out


def leader_rows(url: str) -> list[tuple[int, str]]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT pid, role FROM daemon_nodes WHERE role = 'leader'")).all()
    engine.dispose()
    return [(r.pid, r.role) for r in rows]


def test_one_leader_and_takeover_after_kill_9(
    pg_url: str, tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    ports: dict[int, int] = {}
    for name in ("a", "b", "c"):
        port = free_port()
        home = tmp_path / name
        home.mkdir()
        p = start_daemon(daemon_env(home, pg_url, port), tmp_path / f"{name}.log")
        procs.append(p)
        ports[p.pid] = port
    wait_for(lambda: len(roles(ports)) == 3, 60, "three daemons up")
    wait_for(lambda: list(roles(ports).values()).count("leader") == 1, 30, "one leader")
    # Exactly one leader, observed repeatedly while they all run.
    for _ in range(10):
        current = roles(ports)
        assert list(current.values()).count("leader") == 1, current
        time.sleep(0.3)
    leader = next(pid for pid, r in roles(ports).items() if r == "leader")
    wait_for(lambda: [pid for pid, _ in leader_rows(pg_url)] == [leader], 15,
             "the leader recorded in daemon_nodes")

    os.kill(leader, signal.SIGKILL)
    killed_at = time.monotonic()
    ports.pop(leader)
    wait_for(lambda: "leader" in roles(ports).values(), 60, "a stand-by taking over")
    took = time.monotonic() - killed_at
    assert took < 60
    new = next(pid for pid, r in roles(ports).items() if r == "leader")
    assert new != leader and list(roles(ports).values()).count("leader") == 1

    # A clean stop hands over as well, and releases the lock at once.
    os.kill(new, signal.SIGTERM)
    proc = next(p for p in procs if p.pid == new)
    assert proc.wait(15) == 0
    ports.pop(new)
    wait_for(lambda: list(roles(ports).values()) == ["leader"], 30, "the last daemon leads")
    print(f"takeover after kill -9: {took:.1f}s")
