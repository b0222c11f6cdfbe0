"""`gpuopt submit` reads the job file once: the text it validated is the text it checks
and stores (spec_yaml), and the spec it stores (spec_json) is that validated one; the
plan chosen at submit is shown by `gpuopt status` and `status --json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpuopt.orchestrator.cli import jobs_cmd, submit_cmd

JOB = """\
name: once
run: echo ORIGINAL
model:
  name: gpt2
workload:
  type: finetune
  tokens: 1m
resources:
  gpus: [T4, L4, A10G]
  max_gpus_per_node: 1
checkpoint:
  dir: {ckpt}
"""


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """gpuopt (test)"""

    submit_cmd.register(app)
    jobs_cmd.register(app)
    return app


def test_the_job_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlmodel import select

    import gpuopt.jobs.loader as loader
    from gpuopt.orchestrator.paths import data_dir
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import JobRow

    job_file = tmp_path / "once.yaml"
    job_file.write_text(JOB.format(ckpt=tmp_path / "ckpt"))
    reads: list[Path] = []
    real = loader.read_bounded

    def read_then_edit(path: Path, limit: int) -> bytes:
        data = real(path, limit)
        if Path(path) == job_file:
            reads.append(Path(path))
            # Any later read of the file would see another command.
            job_file.write_text(JOB.format(ckpt=tmp_path / "ckpt").replace("ORIGINAL",
                                                                            "EDITED"))
        return data

    text_reads: list[Path] = []
    real_read_text = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self == job_file:
            text_reads.append(self)
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "read_bounded", read_then_edit)
    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(_app(), ["submit", str(job_file), "--executor", "local"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert reads == [job_file] and text_reads == []

    store = open_store(f"sqlite:///{data_dir() / 'gpuopt.db'}")
    with store.session() as session:
        (row,) = session.exec(select(JobRow)).all()
    store.close()
    assert "echo ORIGINAL" in row.spec_yaml and "EDITED" not in row.spec_yaml
    assert row.spec_json is not None
    assert json.loads(row.spec_json)["spec"]["run"] == "echo ORIGINAL"

    status = CliRunner().invoke(_app(), ["status", row.id, "--json"],
                                catch_exceptions=False)
    assert status.exit_code == 0, status.output
    plan = json.loads(status.stdout)["plan"]
    stored = json.loads(row.plan_json)
    assert plan["candidates"] == stored["candidates"] and plan["candidates"]
    assert plan["offers_source"] == stored["offers_source"]
    text = CliRunner().invoke(_app(), ["status", row.id], catch_exceptions=False,
                              env={**os.environ, "COLUMNS": "80"})
    best = stored["candidates"][0]
    assert "plan at submit:" in text.stdout
    assert f"{best['count']}x{best['gpu']}" in text.stdout
