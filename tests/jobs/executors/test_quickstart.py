"""deploy/examples/quickstart.yaml is a valid job whose `run` succeeds under the local
executor and leaves its result in the checkpoint directory."""

from __future__ import annotations

import json
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, AttemptState
from gpuopt.jobs.executors.local import LocalExecutor
from tests.conftest import REPO_ROOT
from tests.jobs.executors.harness import wait_terminal

EXAMPLE = REPO_ROOT / "deploy" / "examples" / "quickstart.yaml"


def test_quickstart_job_runs_to_completion_locally(tmp_path: Path) -> None:
    from gpuopt.jobs.loader import load_job_spec

    job = load_job_spec(EXAMPLE)
    assert job.run and job.checkpoint is not None
    envs = {k: str(v) for k, v in job.envs.items()}
    envs["TRAIN_SLEEP"] = "0"  # same program, without the demo's pacing
    spec = AttemptSpec(
        job_id="quickstart", attempt=1, run=job.run, setup=job.setup, envs=envs,
        workdir=str((EXAMPLE.parent / (job.workdir or ".")).resolve()),
        checkpoint_dir=str(tmp_path / "ckpt"),
    )
    ex = LocalExecutor(tmp_path / "attempts")
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED, status.last_lines
    result = json.loads((tmp_path / "ckpt" / "result.json").read_text())
    assert result["steps"] == int(envs["TRAIN_STEPS"])
    assert status.progress is not None and status.progress.step == result["steps"]
