"""From a stored job to what the executor launches: file mounts of both kinds survive."""

from __future__ import annotations

from datetime import UTC, datetime

from gpuopt.jobs.loader import parse_job_spec
from gpuopt.orchestrator.reconcile.attempts import attempt_spec
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

T0 = datetime(2026, 11, 30, tzinfo=UTC)
YAML = """model: {name: llama-2-7b}
workload: {type: finetune}
run: python train.py
file_mounts:
  /data/config.json: s3://team/config.json
  /dataset:
    source: s3://team-datasets/alpaca
    mode: copy
checkpoint: {dir: s3://team-ckpt}
"""


def test_storage_mounts_reach_the_attempt_as_skypilot_config() -> None:
    job = JobRow(id="j1", name="j1", status="queued", spec_yaml=YAML, submitted_at=T0,
                 plan_json="{}", executor="skypilot", updated_at=T0)
    attempt = AttemptRow(job_id="j1", number=2, cluster_name="gpuopt-j1-2", cloud="aws",
                         region="us-east-1", zone="us-east-1a", instance_type="g5.xlarge",
                         gpu="A10G", gpu_count=1, market="spot", launched_at=T0,
                         price_micros_per_hour=1_000_000)
    spec = attempt_spec(job, parse_job_spec(YAML, "job.yaml"), attempt)
    assert dict(spec.file_mounts) == {"/data/config.json": "s3://team/config.json"}
    assert {k: dict(v) for k, v in spec.storage_mounts.items()} == {
        "/dataset": {"source": "s3://team-datasets/alpaca", "mode": "COPY"}}
    assert spec.resume and spec.placement.use_spot


def test_wasted_time_never_exceeds_the_held_time_after_rounding() -> None:
    """0.578704 s held, preempted without a checkpoint: all of it was wasted, and the
    millisecond rounding must not make that 0.579 s (more than was held)."""
    from datetime import timedelta

    from gpuopt.orchestrator.reconcile.attempts import wasted_seconds

    started = T0 + timedelta(seconds=10)
    ended = started + timedelta(microseconds=578_704)
    attempt = AttemptRow(job_id="j1", number=1, cluster_name="gpuopt-j1-1", cloud="aws",
                         region="us-east-1", zone="us-east-1a", instance_type="g5.xlarge",
                         gpu="A10G", gpu_count=1, market="spot", launched_at=started,
                         started_at=started, first_progress_at=started,
                         price_micros_per_hour=1_000_000)
    wasted = wasted_seconds(attempt, ended, "preempted", None, None)
    assert wasted == 0.578 <= (ended - started).total_seconds()
