"""Issue 13.5: secrets planted in the daemon's environment never reach a job, its log,
the database or any command's output; a job's own `secrets:` reach only the job.

Before: the local executor gave every job ``{**os.environ}``: a failing job printing its
environment put GPUOPT_SMTP_PASSWORD and the database URL with its password into
attempt.log, attempts.last_log_lines and jobs.last_error; `config show` printed the
database password.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import sqlalchemy as sa

from tests.e2e.cli import gpuopt_command

SMTP = "smtp-Secret-7f3a9c"
AWS = "aws-Secret-Key-0b1d2e"
DB_PASSWORD = "db-Secret-Pw-55aa11"
JOB_TOKEN = "job-Token-Value-9e8d7c"
PLANTED = (SMTP, AWS, DB_PASSWORD)

JOB = """\
name: leaky
run: |
  env | sort > "$GPUOPT_CHECKPOINT_DIR/../env.txt"
  env
  echo "token=$JOB_TOKEN"
  exit 3
secrets:
  JOB_TOKEN:
model:
  name: gpt2
workload:
  type: finetune
  method: full
  tokens: 1m
checkpoint:
  dir: {ckpt}
"""


def _url_with_password(db_url: str) -> str:
    if db_url.startswith("sqlite"):
        return db_url
    scheme, rest = db_url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{DB_PASSWORD}@{host}"  # trust auth: the password is unused


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=180, env=env)


def _database_text(url: str) -> str:
    engine = sa.create_engine(url.replace(f":{DB_PASSWORD}@", "@"))
    out: list[str] = []
    try:
        with engine.connect() as conn:
            for table in sa.inspect(conn).get_table_names():
                for row in conn.execute(sa.text(f'SELECT * FROM "{table}"')):
                    out.extend(str(value) for value in row)
    finally:
        engine.dispose()
    return "\n".join(out)


def test_planted_secrets_reach_nothing(db_url: str, tmp_path: Path) -> None:
    url = _url_with_password(db_url)
    env = {**os.environ, "COLUMNS": "200",
           "GPUOPT_SMTP_PASSWORD": SMTP, "AWS_SECRET_ACCESS_KEY": AWS,
           "GPUOPT_DATABASE_URL": url,
           "DATABASE_URL": f"postgresql://app:{DB_PASSWORD}@db.internal/app",
           "JOB_TOKEN": JOB_TOKEN}
    job = tmp_path / "leaky.yaml"
    job.write_text(JOB.format(ckpt=tmp_path / "ckpt"))

    outputs = [_run(env, "submit", str(job), "--wait", "--interval", "0.2")]
    assert outputs[0].returncode == 1, outputs[0].stderr  # the job failed (exit 3)
    job_env = (tmp_path / "ckpt" / "env.txt").read_text()
    assert f"JOB_TOKEN={JOB_TOKEN}" in job_env  # the job's own secret reached the job
    assert "PATH=" in job_env and "GPUOPT_CHECKPOINT_DIR=" in job_env
    for planted in PLANTED:
        assert planted not in job_env
    assert "GPUOPT_SMTP_PASSWORD" not in job_env and "DATABASE_URL=" not in job_env

    listed = _run(env, "jobs", "--json")
    job_id = __import__("json").loads(listed.stdout)[0]["id"]
    outputs += [listed, _run(env, "status", job_id), _run(env, "logs", job_id),
                _run(env, "config", "show"), _run(env, "daemon", "status")]
    for res in outputs:
        for planted in PLANTED:
            assert planted not in res.stdout + res.stderr, (res.args, planted)
    assert "token=" in outputs[3].stdout  # `logs` shows the real log ...
    assert "***" in outputs[4].stdout or db_url.startswith("sqlite")  # config show: masked

    logs = list(Path(os.environ["GPUOPT_HOME"]).rglob("attempt.log"))
    assert logs
    for log in logs:
        for planted in PLANTED:
            assert planted not in log.read_text()
    stored = _database_text(url)
    assert "exited with code 3" in stored and "token=***" in stored  # last lines kept, redacted
    for secret in (*PLANTED, JOB_TOKEN):
        assert secret not in stored
    assert not list(Path(os.environ["GPUOPT_HOME"]).rglob("secrets/*.json"))  # job ended


def test_missing_secret_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    job = tmp_path / "leaky.yaml"
    job.write_text(JOB.format(ckpt=tmp_path / "ckpt"))
    env = {k: v for k, v in os.environ.items() if k != "JOB_TOKEN"}
    res = _run(env, "submit", str(job))
    assert res.returncode == 2
    assert "secrets JOB_TOKEN not set" in res.stderr and "Traceback" not in res.stderr
    assert not (Path(os.environ["GPUOPT_HOME"]) / "data" / "gpuopt.db").exists()
