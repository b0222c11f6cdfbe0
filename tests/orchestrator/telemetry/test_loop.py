"""A local run with a fake nvidia-smi on PATH through the reconcile loop: its telemetry
is stored and shown by `status`, it becomes a calibration record, and the next plan of
the same job uses the measured throughput (issue 17's "Done means")."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from gpuopt.core.errors import UserError
from gpuopt.jobs.executors.local import LocalExecutor
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.jobs.telemetry.fake_nvsmi import install_fake_nvidia_smi, path_with
from tests.orchestrator.reconcile.conftest import run_until_done, submit, write_job

# A 2-GPU node, one GPU mostly idle; the second GPU reports no power.
ROWS = [(0, 9_000, 23_028, 40, 150.0), (1, 8_500, 23_028, 20, None)]
RUN = ('for i in 1 2 3 4 5 6 7 8; do echo "{\\"step\\": $i, \\"total\\": 8, '
       '\\"tokens\\": $((i * 40000))}" > "$GPUOPT_PROGRESS_FILE"; sleep 0.25; done')


@pytest.fixture
def measured_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store import open_store

    install_fake_nvidia_smi(tmp_path / "bin", ROWS)
    monkeypatch.setenv("PATH", path_with(tmp_path / "bin"))
    url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    monkeypatch.setenv("GPUOPT_DATABASE_URL", url)
    store = open_store(url)
    job_file = write_job(tmp_path, "measured", RUN)
    # The fake GPUs are L4s (23,028 MiB): plan on L4s, whatever is cheapest elsewhere.
    job_file.write_text(job_file.read_text().replace("gpus: [T4, L4, A10G]", "gpus: [L4]"))
    job_id = submit(store, job_file)
    ex = LocalExecutor(tmp_path / "attempts", telemetry_interval=0.1)
    job = run_until_done(store, lambda kind: ex, job_id)
    assert job.status == "succeeded"
    yield store, job_id, job_file
    store.close()


def test_telemetry_status_calibration_and_the_next_plan(measured_job) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.cli.app import build_app
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec
    from gpuopt.orchestrator.store.jobs_repo import attempts_of
    from gpuopt.orchestrator.store.telemetry_repo import calibration_records

    store, job_id, job_file = measured_job
    with store.session() as session:
        (attempt,) = attempts_of(session, [job_id])[job_id]
        records = calibration_records(session)
    # status --json: per attempt, the keys the issue names
    runner = CliRunner()
    app = build_app()
    res = runner.invoke(app, ["status", job_id, "--json"])
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)["attempt_list"][0]
    t = shown["telemetry"]
    assert set(t) == {"peak_memory_mib", "mean_utilization_pct", "energy_wh", "samples",
                      "tokens_per_second"}
    assert t["peak_memory_mib"] == [9_000, 8_500]
    assert t["mean_utilization_pct"] == 30.0 and t["samples"] >= 3
    assert t["energy_wh"] > 0 and t["tokens_per_second"] > 0
    assert shown["estimated"]["peak_memory_mib"] > 0
    assert shown["estimated"]["tokens_per_second"] > 0
    assert shown["utilization_warning"] == ("GPU busy 30% of the time: the data pipeline "
                                            "may be the bottleneck")
    res = runner.invoke(app, ["status", job_id], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "attempt 1 measured: peak 9,000 / 8,500 MiB per GPU (estimate" in " ".join(
        res.output.split())
    assert "GPU busy 30% of the time" in res.output
    # one calibration record: the attempt's configuration and what it measured
    assert len(records) == 1
    record, _at, origin = records[0]
    assert origin == "measured"
    assert (record.gpu, record.gpu_count) == (attempt.gpu, attempt.gpu_count)
    assert record.peak_memory_mib == 9_000
    assert record.tokens_per_second == t["tokens_per_second"]
    # the next plan of the same job: hours from the measured tokens/s on that GPU
    spec = load_job_spec(job_file)
    planned = plan_spec(spec, load_config(None), store, datetime.now(UTC), top=20)
    on_gpu = [c for c in planned.plan.candidates if c.offer.gpu == attempt.gpu
              and c.offer.gpu_count == attempt.gpu_count]
    assert on_gpu
    for c in on_gpu:
        assert c.runtime.source == "measured (1 run)"
        assert c.est_hours == pytest.approx(
            spec.workload.total_tokens / record.tokens_per_second / 3600, rel=1e-9)
    others = [c for c in planned.plan.candidates if c.offer.gpu != attempt.gpu]
    assert all(c.runtime.source == "model" for c in others)
    # the report of this week: the run in the utilisation section (all of it under 50%)
    week = IsoWeek.containing(datetime.now(UTC), ZoneInfo("UTC"))
    res = runner.invoke(app, ["report", "--week", str(week), "--format", "json"])
    assert res.exit_code == 0, res.output
    util = json.loads(res.output)["utilisation"]
    assert Decimal(util["gpu_hours_by_band"]["25-50%"]) > 0
    assert [j["job_id"] for j in util["idle_jobs"]] == [job_id]
    (cost,) = util["cost_per_million_tokens"]
    assert cost["simulated"] and cost["tokens"] > 0
    # estimate --json says where each figure came from
    res = runner.invoke(app, ["estimate", str(job_file), "--gpu", f"{attempt.gpu}:1",
                              "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["runtime_source"] == "measured (1 run)"
    assert doc["memory_source"] == "measured (1 run)"


def test_calibration_export_import_clear(measured_job, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.cli.app import build_app

    runner, app = CliRunner(), build_app()
    out = tmp_path / "team.json"
    assert runner.invoke(app, ["calibration", "export", str(out)]).exit_code == 0
    exported = json.loads(out.read_text())
    assert exported["format"] == "gpuopt-calibration" and len(exported["records"]) == 1
    listed = runner.invoke(app, ["calibration", "list"], env={"COLUMNS": "80"})
    assert listed.exit_code == 0 and "gpt2" in listed.output
    assert runner.invoke(app, ["calibration", "clear"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["calibration", "list", "--json"]).output) == []
    assert runner.invoke(app, ["calibration", "import", str(out)]).exit_code == 0
    (again,) = json.loads(runner.invoke(app, ["calibration", "list", "--json"]).output)
    assert again["origin"] == "imported"
    assert {k: v for k, v in again.items() if k != "origin"} == {
        k: v for k, v in exported["records"][0].items() if k != "origin"}
    # a broken file: exit 2, the record and field named, nothing added
    bad = dict(exported)
    bad["records"] = [exported["records"][0], {**exported["records"][0], "gpu_count": 0}]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    res = runner.invoke(app, ["calibration", "import", str(tmp_path / "bad.json")])
    err = res.exception  # main() turns it into the message and exit code 2
    assert isinstance(err, UserError) and err.exit_code == 2
    assert "bad.json: records[1].gpu_count must be a whole number" in str(err)
    assert len(json.loads(runner.invoke(app, ["calibration", "list", "--json"]).output)) == 1


def test_without_nvidia_smi_nothing_is_measured(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.telemetry_repo import calibration_records

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}/usr/bin{os.pathsep}/bin")
    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    job_id = submit(store, write_job(tmp_path, "plain", RUN))
    ex = LocalExecutor(tmp_path / "attempts", telemetry_interval=0.1)
    assert run_until_done(store, lambda kind: ex, job_id).status == "succeeded"
    from gpuopt.orchestrator.reconcile.measurements import telemetry_views
    from gpuopt.orchestrator.store.jobs_repo import attempts_of

    with store.session() as session:
        attempts = attempts_of(session, [job_id])[job_id]
        assert calibration_records(session) == []
    assert telemetry_views(store, None, attempts) == {}
    store.close()
