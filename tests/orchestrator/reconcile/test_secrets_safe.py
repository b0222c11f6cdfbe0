"""Issue 26.1, 26.2 and 26.10: a job's secrets come only from its submitter, are sealed in
the store for the nodes that may run it, and go with the job's end -- in the same
transaction, so no kill -9 leaves one behind -- and what the program prints of them is
hidden in its log.

Before: ``load_secrets`` fell back to the daemon's own environment for any name (a job
asking for ``AWS_SECRET_ACCESS_KEY`` got the daemon's); the values sat in
``secrets/<id>.json``, written before the job's insert committed and removed after the
commit that ended it, so a kill -9 in either window left the file, value inside, forever;
the log held whatever the program echoed, mode 0644.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from gpuopt.jobs.states import JobStatus
from tests.conftest import REPO_ROOT
from tests.e2e.cli import gpuopt_command
from tests.orchestrator.reconcile.conftest import run_until_done, submit

pytestmark = pytest.mark.slow

TOKEN = "submitter-Token-4b7c9e"
DAEMON_TOKEN = "daemon-Env-Token-1f2e3d"

JOB = """\
name: {name}
run: |
  echo "env token=$HF_TOKEN"
  printf 'split %s' "${{HF_TOKEN:0:6}}"; sleep 0.3; printf '%s end\\n' "${{HF_TOKEN:6}}"
  echo "$HF_TOKEN" > {out}
secrets: [HF_TOKEN]
model:
  name: gpt2
workload:
  type: finetune
  method: full
  tokens: 1m
checkpoint:
  dir: {ckpt}
"""


def _job(tmp: Path, name: str = "sec") -> tuple[Path, Path]:
    out = tmp / f"{name}-seen.txt"
    path = tmp / f"{name}.yaml"
    path.write_text(JOB.format(name=name, out=out, ckpt=tmp / "ckpt"))
    return path, out


def _secret_rows(url: str) -> list[tuple[str, str]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(
                "SELECT job_id, sealed FROM job_secrets"))]  # type: ignore[misc]
    finally:
        engine.dispose()


def _executor(tmp: Path):  # type: ignore[no-untyped-def]
    from gpuopt.jobs.executors.local import LocalExecutor

    ex = LocalExecutor(tmp / "attempts", stop_grace_seconds=1)
    return lambda kind: ex


def test_the_daemon_environment_is_never_a_jobs_secret(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Submitted on host A (its own data directory, its own key), run by a node on host
    B that has HF_TOKEN in its environment: B holds no key the job was sealed for, so it
    refuses the launch -- it never hands out its own value."""
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "host-a"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    job_file, seen = _job(tmp_path)
    job_id = submit(store, job_file)
    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "host-b"))
    monkeypatch.setenv("HF_TOKEN", DAEMON_TOKEN)
    job = run_until_done(store, _executor(tmp_path), job_id)
    assert job.status == JobStatus.FAILED
    assert "holds none of the keys" in (job.last_error or "")
    assert not seen.exists()  # the program never ran, with either value
    assert _secret_rows(db_url) == []  # the job ended: its sealed secrets went with it
    store.close()


def test_two_nodes_both_open_the_submitters_value_never_their_own(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.submit.job_secrets import publish_key

    store = open_store(db_url)
    now = datetime.now(UTC)
    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "host-b"))
    publish_key(store, now, "host-b")  # the daemon on B started first
    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "host-a"))
    publish_key(store, now, "host-a")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    job_file, seen = _job(tmp_path)
    job_id = submit(store, job_file)
    rows = _secret_rows(db_url)
    assert len(rows) == 2 and all(TOKEN not in sealed for _, sealed in rows)
    monkeypatch.setenv("GPUOPT_HOME", str(tmp_path / "host-b"))
    monkeypatch.setenv("HF_TOKEN", DAEMON_TOKEN)
    job = run_until_done(store, _executor(tmp_path), job_id)
    assert job.status == JobStatus.SUCCEEDED, job.last_error
    assert seen.read_text().strip() == TOKEN  # the submitter's value, not B's
    assert _secret_rows(db_url) == []
    store.close()


def test_a_program_echoing_its_secret_leaves_only_stars_in_the_log(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.store import open_store

    store = open_store(db_url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    job_file, seen = _job(tmp_path)
    job_id = submit(store, job_file)
    job = run_until_done(store, _executor(tmp_path), job_id)
    assert job.status == JobStatus.SUCCEEDED
    assert seen.read_text().strip() == TOKEN  # the program had the value
    (log,) = (tmp_path / "attempts").glob("*/attempt.log")
    text = log.read_text()
    assert "env token=***" in text and "split *** end" in text  # also split over writes
    assert TOKEN not in text and TOKEN[:6] + TOKEN[6:] not in text
    assert log.stat().st_mode & 0o777 == 0o600
    store.close()


def test_gpuopt_logs_redacts_the_jobs_secret(tmp_path: Path) -> None:
    """The CLI, as a user runs it; the attempt log of an older release (unredacted)
    is redacted by `logs` while the job's secrets can still be opened."""
    env = {**os.environ, "HF_TOKEN": TOKEN, "COLUMNS": "200"}
    job_file, _ = _job(tmp_path, "clilog")
    job_file.write_text(job_file.read_text().replace("sleep 0.3;", "sleep 30;"))
    res = subprocess.Popen([*gpuopt_command(), "submit", str(job_file), "--wait",
                            "--interval", "0.2"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        home = Path(os.environ["GPUOPT_HOME"])
        deadline = datetime.now(UTC).timestamp() + 120
        logs: list[Path] = []
        while not logs or "split" not in logs[0].read_text():
            assert datetime.now(UTC).timestamp() < deadline, "the job did not start"
            logs = list(home.rglob("attempt.log"))
        with logs[0].open("a") as fh:  # as an older release's log would hold it
            fh.write(f"old release {TOKEN}\n")
        listed = subprocess.run([*gpuopt_command(), "jobs", "--json"], env=env,
                                capture_output=True, text=True, timeout=60)
        job_id = json.loads(listed.stdout)[0]["id"]
        out = subprocess.run([*gpuopt_command(), "logs", job_id], env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "env token=***" in out.stdout and "old release ***" in out.stdout
        assert TOKEN not in out.stdout + out.stderr
        subprocess.run([*gpuopt_command(), "cancel", job_id], env=env,
                       capture_output=True, text=True, timeout=60)
    finally:
        res.wait(timeout=120)


def _submit_process(db_url: str, job_file: Path, crash_at: str) -> subprocess.CompletedProcess[
        str]:
    env = {**os.environ, "GPUOPT_DATABASE_URL": db_url, "GPUOPT_CRASH_AT": crash_at,
           "HF_TOKEN": TOKEN}
    return subprocess.run([*gpuopt_command(), "submit", str(job_file)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_kill_9_before_the_submit_commits_leaves_no_secret(db_url: str, tmp_path: Path) -> None:
    job_file, _ = _job(tmp_path)
    res = _submit_process(db_url, job_file, "sealing")
    assert res.returncode == -signal.SIGKILL, res.stdout + res.stderr
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT COUNT(*) FROM jobs")).scalar() == 0
    finally:
        engine.dispose()
    assert _secret_rows(db_url) == []
    home = Path(os.environ["GPUOPT_HOME"])
    assert not list(home.rglob("secrets/*.json"))  # nor a file, anywhere
    for path in home.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_kill_9_as_the_job_ends_leaves_no_secret(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    store = open_store(db_url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    job_file, seen = _job(tmp_path)
    job_id = submit(store, job_file)
    monkeypatch.delenv("HF_TOKEN")

    def launcher(crash_at: str | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "GPUOPT_CRASH_AT"}
        if crash_at:
            env["GPUOPT_CRASH_AT"] = crash_at
        return subprocess.run(
            [sys.executable, "-m", "tests.orchestrator.reconcile.launcher", db_url,
             str(tmp_path / "attempts"), job_id, "0", "400"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240)

    first = launcher("ending")
    assert first.returncode == -signal.SIGKILL, first.stderr
    with store.session() as session:  # rolled back: the job is live, its secret kept
        assert session.get(JobRow, job_id).status.is_live  # type: ignore[union-attr]
    assert len(_secret_rows(db_url)) == 1
    second = launcher(None)
    assert second.returncode == 0, second.stderr
    with store.session() as session:
        assert session.get(JobRow, job_id).status == JobStatus.SUCCEEDED  # type: ignore
    assert _secret_rows(db_url) == []
    assert seen.read_text().strip() == TOKEN
    store.close()


def test_every_way_a_job_ends_removes_its_secret_in_that_transaction(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import transition

    store = open_store(db_url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    job_id = submit(store, _job(tmp_path)[0])
    now = datetime.now(UTC)
    with pytest.raises(RuntimeError), store.transaction() as session:
        assert transition(session, job_id, (JobStatus.QUEUED,), now, status=JobStatus.FAILED)
        raise RuntimeError("rolled back")  # the end did not commit: the secret stays
    assert len(_secret_rows(db_url)) == 1
    with store.transaction() as session:  # a live-to-live change keeps it
        transition(session, job_id, (JobStatus.QUEUED,), now, status=JobStatus.PREEMPTED)
    assert len(_secret_rows(db_url)) == 1
    with store.transaction() as session:
        transition(session, job_id, (JobStatus.PREEMPTED,), now, status=JobStatus.CANCELLED)
    assert _secret_rows(db_url) == []
    store.close()


def test_the_sweep_at_start_removes_what_older_releases_left(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import set_job
    from gpuopt.orchestrator.submit.job_secrets import legacy_secrets_file, open_secrets, sweep

    store = open_store(db_url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    ended = submit(store, _job(tmp_path, "ended")[0])
    live = submit(store, _job(tmp_path, "live")[0])
    with store.transaction() as session:  # ended without the transition (an old release)
        set_job(session, ended, status=JobStatus.SUCCEEDED)
    for job_id in (ended, live, "never-stored-abc123"):
        path = legacy_secrets_file(job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"HF_TOKEN": TOKEN}))
    assert sweep(store) == 3  # the ended job's row and the two files not of a live job
    assert [job for job, _ in _secret_rows(db_url)] == [live]
    assert legacy_secrets_file(live).exists() and not legacy_secrets_file(ended).exists()
    assert open_secrets(store, live, ["HF_TOKEN"]) == {"HF_TOKEN": TOKEN}
    store.close()


def test_credentials_names_are_refused_with_file_and_line(tmp_path: Path) -> None:
    for block, name in (("secrets: [HF_TOKEN, AWS_SECRET_ACCESS_KEY]", "AWS_SECRET_ACCESS_KEY"),
                        ("secrets:\n  GPUOPT_SMTP_PASSWORD:", "GPUOPT_SMTP_PASSWORD"),
                        ("envs:\n  GOOGLE_APPLICATION_CREDENTIALS: /k.json",
                         "GOOGLE_APPLICATION_CREDENTIALS"),
                        ("envs:\n  AZURE_CLIENT_SECRET: x", "AZURE_CLIENT_SECRET")):
        job = tmp_path / "bad.yaml"
        job.write_text(JOB.format(name="bad", out=tmp_path / "o", ckpt=tmp_path / "c")
                       .replace("secrets: [HF_TOKEN]", block))
        env = {**os.environ, "HF_TOKEN": TOKEN, name: "daemon-value", "COLUMNS": "200"}
        res = subprocess.run([*gpuopt_command(), "submit", str(job), "--dry-run"], env=env,
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 2, res.stdout + res.stderr
        line = block.split(":")[0]
        expected = next(i for i, text in enumerate(job.read_text().splitlines(), 1)
                        if text.startswith(line))
        assert f"bad.yaml:{expected} " in res.stderr and name in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
