"""Reconcile fixtures: a store (SQLite, and PostgreSQL where marked), a job file running
deploy/examples/train_counter.py quickly, and an executor that counts its launches."""

from __future__ import annotations

import shlex
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.executors.base import AttemptSpec, Executor, LaunchResult
from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "deploy" / "examples" / "train_counter.py"

JOB_YAML = """\
name: {name}
run: |
  {run}
model:
  name: gpt2
workload:
  type: finetune
  method: full
  precision: fp32
  batch_size: 8
  seq_len: 512
  tokens: 5m
resources:
  gpus: [T4, L4, A10G]
  max_gpus_per_node: 1
  max_price_per_hour: 1.00
deadline: 2h
budget: 5
owner: tester@example.com
team: t
checkpoint:
  dir: {ckpt}
  interval: 1m
max_restarts_on_errors: {restarts}
"""


def train_run(steps: int, sleep: float, every: int = 20) -> str:
    return (f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} "
            f"--steps {steps} --every {every} --sleep {sleep}")


def write_job(tmp: Path, name: str, run: str, restarts: int = 0) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(JOB_YAML.format(name=name, run=run, ckpt=tmp / "ckpt", restarts=restarts))
    return path


class CountingExecutor:
    """Wraps an executor; records every launch() call (shared across wrappers via ``log``)."""

    def __init__(self, inner: Executor, log: list[str], lock: threading.Lock) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.log = log
        self.lock = lock

    def launch(self, spec: AttemptSpec) -> LaunchResult:
        with self.lock:
            self.log.append(spec.cluster_name)
        return self.inner.launch(spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'gpuopt.db'}"


def submit(store: Any, job_file: Path, kind: str = "local") -> str:
    import os

    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.submit.service import JobFile, plan_job, read_job, store_job

    job = JobFile(job_file, job_file.read_text(encoding="utf-8"))
    now = datetime.now(UTC)
    sub = read_job(job, now, os.environ)
    planned = plan_job(sub, load_config(None), store, now)
    return store_job(store, sub, planned, kind, now)


def run_until_done(store: Any, executor_for: Callable[[str], Executor], job_id: str,
                   timeout: float = 60.0, interval: float = 0.05) -> Any:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    settings = load_config(None)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        report = reconcile_once(store, executor_for, settings)
        assert not report.errors, report.errors
        with store.session() as session:
            job = session.get(JobRow, job_id)
        if job.status in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(interval)
    raise AssertionError(f"{job_id} did not finish in {timeout} s")


def counts(log: list[str]) -> Counter[str]:
    return Counter(log)
