"""Issue 13.5: what a job's environment is made of, on each executor."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuopt.jobs.executors.base import AttemptSpec
from gpuopt.jobs.executors.contract import inherited_env
from gpuopt.jobs.executors.local import job_environment
from gpuopt.jobs.executors.sky_task import build_sky_task, plan_task
from tests.jobs.executors.harness import SKY_PLACEMENT


def test_local_job_gets_allow_list_envs_secrets_and_contract_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUOPT_SMTP_PASSWORD", "smtp-pw")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-key")
    monkeypatch.setenv("LC_TIME", "C")
    spec = AttemptSpec(job_id="j", attempt=1, run="true", checkpoint_dir="/c",
                       envs={"A": "1"}, secrets={"HF_TOKEN": "hf-secret"})
    env = job_environment(spec, checkpoint_dir="/c/j", progress_file="/w/p.json")
    assert env["A"] == "1" and env["HF_TOKEN"] == "hf-secret" and env["LC_TIME"] == "C"
    assert env["GPUOPT_CHECKPOINT_DIR"] == "/c/j" and "PATH" in env
    assert "GPUOPT_SMTP_PASSWORD" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert set(env) - {"A", "HF_TOKEN"} - set(inherited_env(dict(env))) <= {
        k for k in env if k.startswith("GPUOPT_")}
    assert "hf-secret" not in repr(spec)  # secrets are left out of the spec's repr


def test_skypilot_gets_secrets_as_task_secrets_not_envs(tmp_path: Path) -> None:
    spec = AttemptSpec(job_id="sky1", attempt=1, run="true", checkpoint_dir=str(tmp_path),
                       placement=SKY_PLACEMENT, secrets={"HF_TOKEN": "hf-secret"})
    plan = plan_task(spec)
    assert dict(plan.secrets) == {"HF_TOKEN": "hf-secret"}
    assert "HF_TOKEN" not in plan.envs and "hf-secret" not in repr(plan)
    task = build_sky_task(plan)
    # SkyPilot keeps them as SecretStr (redacted when shown)
    assert {k: getattr(v, "get_secret_value", lambda v=v: v)() for k, v in task.secrets.items()
            } == {"HF_TOKEN": "hf-secret"}
    assert "hf-secret" not in repr(task.secrets)
    assert "HF_TOKEN" not in task.envs
