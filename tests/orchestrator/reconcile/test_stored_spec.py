"""The daemon reads the spec stored at submit (jobs.spec_json), never the submitter's
files: a job file and a config.json edited or deleted after submit change nothing."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.orchestrator.reconcile.attempts import load_stored_spec
from tests.orchestrator.reconcile.conftest import (
    JOB_YAML,
    CountingExecutor,
    run_until_done,
    submit,
    train_run,
    write_job,
)

GPT2_CONFIG = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
               "vocab_size": 50257, "n_positions": 1024}
HUGE_CONFIG = {"model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 80,
               "num_attention_heads": 64, "num_key_value_heads": 8,
               "intermediate_size": 28672, "vocab_size": 128256}


def _config_job(tmp: Path) -> tuple[Path, Path]:
    config = tmp / "model" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps(GPT2_CONFIG))
    text = JOB_YAML.format(name="cfg", run=train_run(40, 0.005), ckpt=tmp / "ckpt",
                           restarts=0).replace("  name: gpt2\n", "  config: model/config.json\n")
    job = tmp / "cfg.yaml"
    job.write_text(text)
    return job, config


def test_job_runs_after_its_files_change_and_vanish(tmp_path: Path) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_repo import attempts_of
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    job_file, config = _config_job(tmp_path)
    job_id = submit(store, job_file)
    with store.session() as session:
        row = session.get(JobRow, job_id)
        assert row is not None and row.spec_json is not None
        planned = json.loads(row.plan_json)["candidates"][0]
    # A 70b model in the config.json now (no T4/L4/A10G fits it), then no files at all.
    config.write_text(json.dumps(HUGE_CONFIG))
    job_file.write_text("not: [a job")
    config.unlink()
    job_file.unlink()
    launches: list[str] = []
    ex = CountingExecutor(LocalExecutor(tmp_path / "attempts"), launches, threading.Lock())
    job = run_until_done(store, lambda kind: ex, job_id)
    with store.session() as session:
        attempts = attempts_of(session, [job_id])[job_id]
    store.close()
    assert job.status == "succeeded", job.last_error
    assert len(attempts) == 1 and attempts[0].end_reason == "succeeded"
    a = attempts[0]
    assert (a.gpu, a.gpu_count, a.instance_type, a.cloud) == (
        planned["gpu"], planned["count"], planned["instance_type"], planned["cloud"])
    assert load_stored_spec(job).resolved_model().layers == 12


def test_rows_from_before_the_column_are_parsed_from_their_yaml(tmp_path: Path) -> None:
    from sqlalchemy import update
    from sqlmodel import col

    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    job_id = submit(store, write_job(tmp_path, "old", train_run(20, 0.005)))
    with store.transaction() as session:  # as a row stored before 0009_resolved_spec
        session.execute(update(JobRow).where(col(JobRow.id) == job_id).values(spec_json=None))
    with store.session() as session:
        row = session.get(JobRow, job_id)
        assert row is not None and row.spec_json is None
    spec = load_stored_spec(row)
    assert spec.name == "old" and spec.resolved_model().name == "gpt2"
    ex = LocalExecutor(tmp_path / "attempts")
    job = run_until_done(store, lambda kind: ex, job_id)
    store.close()
    assert job.status == "succeeded", job.last_error
