"""`submit` knows from the leadership table whether a daemon leads for its store, and
says so (issue 29.5: it told the user to run `gpuopt daemon` while one ran)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.net import free_port
from tests.orchestrator.daemon.conftest import daemon_env, gpuopt_cmd, start_daemon, wait_for
from tests.orchestrator.daemon.test_process import healthy, stop

pytestmark = pytest.mark.slow


def _submit(env: dict[str, str], where: Path) -> subprocess.CompletedProcess[str]:
    """The quickstart job, copied beside its program into ``where`` (its checkpoints go
    there, not into the repository)."""
    examples = REPO_ROOT / "deploy" / "examples"
    for name in ("quickstart.yaml", "train_counter.py"):
        (where / name).write_bytes((examples / name).read_bytes())
    return subprocess.run(gpuopt_cmd("submit", "quickstart.yaml"), env=env,
                          capture_output=True, text=True, timeout=120, cwd=where)


def test_submit_says_whether_a_daemon_leads(
        tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    db = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    port = free_port()
    env = daemon_env(tmp_path, db, port)
    alone = _submit(env, tmp_path)
    assert alone.returncode == 0, alone.stderr
    assert "no daemon runs for this store: start one (`gpuopt daemon`)" in alone.stdout

    daemon = start_daemon(env, tmp_path / "daemon.log")
    procs.append(daemon)
    wait_for(lambda: healthy(port), 30, "the daemon's /healthz")
    wait_for(lambda: subprocess.run(gpuopt_cmd("daemon", "status"), env=env,
                                    capture_output=True, timeout=60).returncode == 0,
             30, "the daemon to lead")
    led = _submit(env, tmp_path)
    assert led.returncode == 0, led.stderr
    assert f"(pid {daemon.pid}) leads for this store and will start it" in led.stdout
    assert "start one" not in led.stdout
    assert stop(daemon) == 0


def test_submit_sees_the_leader_on_postgresql(
        pg_url: str, tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    """On PostgreSQL the leadership table names the leader; submit says which."""
    port = free_port()
    env = daemon_env(tmp_path, pg_url, port)
    daemon = start_daemon(env, tmp_path / "daemon.log")
    procs.append(daemon)
    wait_for(lambda: healthy(port), 60, "the daemon's /healthz")
    wait_for(lambda: subprocess.run(gpuopt_cmd("daemon", "status"), env=env,
                                    capture_output=True, timeout=60).returncode == 0,
             60, "the daemon to lead")
    led = _submit(env, tmp_path)
    assert led.returncode == 0, led.stderr
    assert f"(pid {daemon.pid}) leads for this store and will start it" in led.stdout
    assert stop(daemon) == 0
    after = _submit(env, tmp_path)
    assert "no daemon runs for this store" in after.stdout
