"""The checkpoint contract: the environment every attempt's program gets.

See docs/checkpoint-contract.md. The GPUOPT_* variables always win over a user's
``envs`` of the same name: the contract is what makes resume-after-preemption work.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, Progress

ENV_JOB_ID = "GPUOPT_JOB_ID"
ENV_ATTEMPT = "GPUOPT_ATTEMPT"
ENV_CHECKPOINT_DIR = "GPUOPT_CHECKPOINT_DIR"
ENV_RESUME = "GPUOPT_RESUME"
ENV_PROGRESS_FILE = "GPUOPT_PROGRESS_FILE"
ENV_CLUSTER_NAME = "GPUOPT_CLUSTER_NAME"
CONTRACT_VARS = (
    ENV_JOB_ID,
    ENV_ATTEMPT,
    ENV_CHECKPOINT_DIR,
    ENV_RESUME,
    ENV_PROGRESS_FILE,
    ENV_CLUSTER_NAME,
)


def contract_env(spec: AttemptSpec, *, checkpoint_dir: str, progress_file: str) -> dict[str, str]:
    """The user's envs plus the contract. ``checkpoint_dir`` is the path *as the program
    sees it* (a local directory, or the mount point of the checkpoint bucket)."""
    env = dict(spec.envs)
    env.update(
        {
            ENV_JOB_ID: spec.job_id,
            ENV_ATTEMPT: str(spec.attempt),
            ENV_CHECKPOINT_DIR: checkpoint_dir,
            ENV_RESUME: "1" if spec.resume else "0",
            ENV_PROGRESS_FILE: progress_file,
            ENV_CLUSTER_NAME: spec.cluster_name,
        }
    )
    return env


def parse_progress(text: str) -> Progress | None:
    """``{"step": n, "total": m}`` -> Progress; anything else (half-written, junk) -> None."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    step, total = data.get("step"), data.get("total")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        return None
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        total = None
    return Progress(step=step, total=total)


def read_progress(path: Path) -> Progress | None:
    try:
        return parse_progress(path.read_text(encoding="utf-8"))
    except OSError:
        return None
