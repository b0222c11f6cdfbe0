"""The daemon as a real process on SQLite: one daemon per database, clean SIGTERM,
/healthz and /metrics, and the weekly report missed while down sent once, never twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.net import free_port
from tests.orchestrator.daemon.conftest import (
    daemon_env,
    gpuopt_cmd,
    start_daemon,
    wait_for,
)
from tests.orchestrator.report.conftest import Sink

pytestmark = pytest.mark.slow


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    code, text = http_get(f"http://127.0.0.1:{port}/metrics")
    assert code == 200
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def healthy(port: int) -> dict[str, object] | None:
    code, body = http_get(f"http://127.0.0.1:{port}/healthz")
    return json.loads(body) if code == 200 else None


def as_leader(body: dict[str, object] | None) -> dict[str, object] | None:
    return body if body is not None and body["role"] == "leader" else None


def task_runs(port: int, task: str) -> float:
    return scrape(port).get(("gpuopt_daemon_task_runs_total", (("task", task),)), 0.0)


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    os.kill(proc.pid, sig)
    return proc.wait(15)


def test_second_daemon_on_one_sqlite_file_refuses_with_exit_2(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    db = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    port = free_port()
    first = start_daemon(daemon_env(tmp_path, db, port), tmp_path / "first.log")
    procs.append(first)
    wait_for(lambda: as_leader(healthy(port)), 30, "the first daemon to lead")
    second = subprocess.run(
        gpuopt_cmd("daemon", "run"), env=daemon_env(tmp_path, db, free_port()),
        capture_output=True, text=True, timeout=60,
    )
    assert second.returncode == 2
    assert f"pid {first.pid}" in second.stderr and "already running" in second.stderr
    assert "Traceback" not in second.stderr
    assert first.poll() is None  # the first one is unaffected
    status = subprocess.run(gpuopt_cmd("daemon", "status", "--json"),
                            env=daemon_env(tmp_path, db, port), capture_output=True, text=True,
                            timeout=60)
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["running"] is True and info["leader"]["pid"] == first.pid

    started = time.monotonic()
    assert stop(first) == 0
    assert time.monotonic() - started < 10
    after = subprocess.run(gpuopt_cmd("daemon", "status"), env=daemon_env(tmp_path, db, port),
                           capture_output=True, text=True, timeout=60)
    assert after.returncode == 3 and "not running" in after.stdout


def test_metrics_and_healthz_answer_and_json_logs(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    db = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    port = free_port()
    log = tmp_path / "daemon.log"
    proc = start_daemon(daemon_env(tmp_path, db, port), log, "--log-format", "json")
    procs.append(proc)
    # /healthz answers "starting" until the daemon holds the lease: wait for "leader"
    body = wait_for(lambda: as_leader(healthy(port)), 30, "/healthz with role leader")
    assert isinstance(body, dict) and body["status"] == "ok"
    wait_for(lambda: task_runs(port, "reconcile") >= 2, 30, "two reconcile runs")
    metrics = scrape(port)
    assert metrics[("gpuopt_daemon_leader", ())] == 1.0
    assert metrics[("gpuopt_store_up", ())] == 1.0
    assert metrics[("gpuopt_jobs", (("state", "queued"),))] == 0.0
    assert metrics[("gpuopt_spend_usd_total", ())] == 0.0
    assert http_get(f"http://127.0.0.1:{port}/nothing")[0] == 404
    assert stop(proc, signal.SIGINT) == 0
    lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
    records = [json.loads(ln) for ln in lines]  # every line is one JSON object
    assert {"ts", "level", "logger", "message"} <= set(records[0])
    assert any("leader since" in r["message"] for r in records)
    assert records[-1]["message"] == "stopped"


def test_report_missed_while_down_is_sent_once_on_start_never_twice(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    from aiosmtpd.controller import Controller

    sink = Sink()
    smtp = Controller(sink, hostname="127.0.0.1", port=free_port())
    smtp.start()
    try:
        db = f"sqlite:///{tmp_path / 'gpuopt.db'}"
        port = free_port()
        env = daemon_env(
            tmp_path, db, port,
            GPUOPT_REPORT_RECIPIENTS=json.dumps({"everyone": ["ops@example.com"],
                                                 "nlp": ["nlp@example.com"]}),
            GPUOPT_SMTP_HOST="127.0.0.1", GPUOPT_SMTP_PORT=str(smtp.port),
            GPUOPT_SMTP_SECURITY="none",
        )
        # The latest due week's report was never sent: this start is "after downtime".
        for run in range(3):
            proc = start_daemon(env, tmp_path / f"run{run}.log")
            procs.append(proc)
            wait_for(lambda: healthy(port), 30, "/healthz")
            wait_for(lambda: task_runs(port, "report") >= 1, 30, "the start-up report tick")
            # run 1 stops cleanly, run 2 is killed -9: neither may cause a second send.
            if run == 1:
                assert stop(proc, signal.SIGKILL) == -signal.SIGKILL
            else:
                assert stop(proc) == 0
            assert len(sink.messages) == 2, f"after start {run + 1}"
        assert sorted(m.rcpt_tos[0] for m in sink.messages) == ["nlp@example.com",
                                                                  "ops@example.com"]
    finally:
        smtp.stop()
    import sqlalchemy as sa

    engine = sa.create_engine(db)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT scope, sent_at FROM report_sends")).all()
    engine.dispose()
    assert sorted(r.scope for r in rows) == ["everyone", "team:nlp"]
    assert all(r.sent_at is not None for r in rows)
