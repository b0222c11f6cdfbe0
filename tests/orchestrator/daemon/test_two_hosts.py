"""Issue 26.4: two control nodes with the local executor on one PostgreSQL, each with its
own GPUOPT_HOME (two hosts: their host ids and boot ids are given as parameters, as
`current_host()` reads them on a real host).

Before: the loop on host B could not see host A's process, closed attempt 1 as
"preempted (lost: no such attempt)" and started attempt 2 while attempt 1 still ran.
Now an attempt records its host and boot; a loop on another host leaves it alone; a
daemon refuses to lead while another host with live local attempts has a live daemon,
and `gpuopt daemon status` names attempts nobody can watch.
"""

from __future__ import annotations

import shlex
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpuopt.jobs.executors.host import HostIdentity, current_host
from gpuopt.jobs.states import AttemptPhase, JobStatus
from tests.orchestrator.reconcile.conftest import submit, write_job

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

HOST_A = HostIdentity("host-a", "boot-a")
HOST_B = HostIdentity("host-b", "boot-b")


def _program(runs: Path, seconds: float) -> str:
    return (f"echo \"$GPUOPT_ATTEMPT $$\" >> {shlex.quote(str(runs))}; "
            f"{shlex.quote(sys.executable)} -c 'import time; time.sleep({seconds})'")


def _rows(store, job_id):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.jobs_repo import job_with_attempts

    with store.session() as session:
        return job_with_attempts(session, job_id)


def test_a_loop_on_another_host_never_takes_a_local_attempt_for_lost(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.jobs.executors.local import LocalExecutor
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store import open_store

    store = open_store(pg_url)
    settings = load_config(None)
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "home-a"))
    on_a = LocalExecutor(tmp_path / "home-a" / "attempts", host=HOST_A, stop_grace_seconds=1)
    on_b = LocalExecutor(tmp_path / "home-b" / "attempts", host=HOST_B, stop_grace_seconds=1)
    job_id = submit(store, write_job(tmp_path, "twohosts", _program(runs, 4)))
    deadline = time.monotonic() + 60
    while not runs.exists():
        assert time.monotonic() < deadline
        reconcile_once(store, lambda kind: on_a, settings)
        time.sleep(0.1)
    _, (a,) = _rows(store, job_id)
    assert (a.host, a.boot_id) == ("host-a", "boot-a")

    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "home-b"))  # the other control node
    for skew in (0, 60, 600):  # well past the launch grace
        report = reconcile_once(store, lambda kind: on_b, settings,
                                datetime.now(UTC) + timedelta(seconds=skew))
        assert report.elsewhere == [(job_id, 1, "host-a")]
        assert report.launched == [] and report.ended == []
    job, attempts = _rows(store, job_id)
    assert len(attempts) == 1 and attempts[0].status != AttemptPhase.ENDED
    assert job.status.is_live

    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "home-a"))
    deadline = time.monotonic() + 120
    while job.status.is_live:
        assert time.monotonic() < deadline
        reconcile_once(store, lambda kind: on_a, settings)
        job, attempts = _rows(store, job_id)
        time.sleep(0.1)
    assert job.status == JobStatus.SUCCEEDED and len(attempts) == 1
    assert len(runs.read_text().splitlines()) == 1  # the program ran once
    store.close()


def _daemon(name: str, url: str, store, host: HostIdentity):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.leadership import PgAdvisoryLeadership
    from gpuopt.orchestrator.daemon.runner import Daemon
    from gpuopt.orchestrator.store.daemon_state import NodeInfo
    from tests.orchestrator.daemon.test_leader_loss import Recorder

    settings = load_config(env={
        "GPUOPT_CLOUDS_ENABLED": "[]", "GPUOPT_DAEMON_RECONCILE_INTERVAL": "1s",
        "GPUOPT_DAEMON_LEASE_RENEW": "1s", "GPUOPT_DAEMON_LEASE_TTL": "3s",
    })
    now = datetime.now(UTC)
    node = NodeInfo(f"{name}:1:1", host.host_id, 1, now, "standby", None, now, None)
    daemon = Daemon(settings, url, store, PgAdvisoryLeadership(url), node, host=host)
    daemon.tasks = Recorder(name, daemon.is_leader)  # type: ignore[assignment]
    return daemon, settings


def test_a_daemon_refuses_to_lead_while_the_host_of_live_local_attempts_has_one(
        pg_url: str, tmp_path: Path) -> None:
    from gpuopt.orchestrator.daemon.status import gather_status, render_text
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.daemon_state import NodeInfo, heartbeat
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

    store = open_store(pg_url)
    job_id = submit(store, write_job(tmp_path, "held", "sleep 1"))
    now = datetime.now(UTC)
    with store.transaction() as session:  # a live local attempt that host A runs
        session.add(AttemptRow(job_id=job_id, number=1, cluster_name="gpuopt-held-1",
                               cloud="aws", market="spot", price_per_hour_micros=1,
                               status=AttemptPhase.RUNNING, created_at=now, started_at=now,
                               host="host-a", boot_id="boot-a"))
    node_a = NodeInfo("a:1:1", "host-a", 1, now, "leader", now, now, None)
    beating = threading.Event()

    def a_beats() -> None:  # host A's daemon is alive (its heartbeat is fresh)
        while not beating.is_set():
            heartbeat(store, node_a, role="leader", leader_since=now, at=datetime.now(UTC))
            beating.wait(0.5)

    beat = threading.Thread(target=a_beats, daemon=True)
    beat.start()
    daemon_b, settings = _daemon("b", pg_url, store, HOST_B)
    loop = threading.Thread(target=daemon_b.loop, daemon=True)
    loop.start()
    try:
        time.sleep(4)  # several stand-by retries: the lock is free, yet B must not take it
        assert daemon_b.runtime.role == "standby"
        assert daemon_b.refusal is not None and "host-a" in daemon_b.refusal
        text = render_text(gather_status(store, settings, pg_url, datetime.now(UTC)), "UTC")
        assert "local attempts: 1 on host-a" in text
        assert "stand-by on host-b does not lead" in " ".join(text.split())

        beating.set()  # host A's daemon is gone: B leads, and leaves A's attempt alone
        beat.join()
        deadline = time.monotonic() + 30
        while daemon_b.runtime.role != "leader":
            assert time.monotonic() < deadline, "B never led after A's daemon was gone"
            time.sleep(0.1)
        text = render_text(gather_status(store, settings, pg_url, datetime.now(UTC)), "UTC")
        assert "1 local attempt(s) on host host-a are not watched: no daemon runs there" \
            in " ".join(text.split()), text
    finally:
        daemon_b.stop.set()
        loop.join(20)
        daemon_b.shutdown()
        store.close()


def test_current_host_reads_the_boot_id(tmp_path: Path) -> None:
    boot = tmp_path / "boot_id"
    boot.write_text("4f1c0a6e-2b9d-4c55-9a51-3d2f6f3b8e11\n")
    here = current_host("node-1", boot)
    assert here == HostIdentity("node-1", "4f1c0a6e-2b9d-4c55-9a51-3d2f6f3b8e11")
    assert current_host("node-1", tmp_path / "missing").boot_id == ""
