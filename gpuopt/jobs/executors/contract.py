"""The checkpoint contract: the environment every attempt's program gets.

See docs/checkpoint-contract.md. The GPUOPT_* variables always win over a user's
``envs`` of the same name: the contract is what makes resume-after-preemption work.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, Progress

ENV_JOB_ID = "GPUOPT_JOB_ID"
ENV_ATTEMPT = "GPUOPT_ATTEMPT"
ENV_CHECKPOINT_DIR = "GPUOPT_CHECKPOINT_DIR"
ENV_RESUME = "GPUOPT_RESUME"
ENV_PROGRESS_FILE = "GPUOPT_PROGRESS_FILE"
ENV_CLUSTER_NAME = "GPUOPT_CLUSTER_NAME"
# The nodes of one attempt (every attempt has them; one node: rank 0 of 1). On SkyPilot
# they are mapped from SkyPilot's own (SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES,
# SKYPILOT_NODE_IPS) by the run command (SKYPILOT_NODE_ENV); the local executor sets
# them for each of its N processes.
ENV_NODE_RANK = "GPUOPT_NODE_RANK"
ENV_NUM_NODES = "GPUOPT_NUM_NODES"
ENV_NODE_IPS = "GPUOPT_NODE_IPS"  # one address a line, rank 0's first
ENV_MASTER_ADDR = "GPUOPT_MASTER_ADDR"  # rank 0's address
ENV_MASTER_PORT = "GPUOPT_MASTER_PORT"
# torchrun's default rendezvous port: a SkyPilot cluster's nodes are the attempt's own.
DEFAULT_MASTER_PORT = 29500
# The store keeps progress as BIGINT (PostgreSQL int8, SQLite's 8-byte INTEGER): a value
# beyond it is the program's mistake and is ignored (logged), never fails a reconcile step.
MAX_PROGRESS = 2**63 - 1
_MAX_PROGRESS_TEXT = 4096  # a progress file is one small JSON object
log = logging.getLogger(__name__)

# Prepended to the run command on a SkyPilot node: the contract's node variables from
# SkyPilot's (https://docs.skypilot.co/en/latest/running-jobs/environment-variables.html).
SKYPILOT_NODE_ENV = (
    f'export {ENV_NODE_RANK}="${{SKYPILOT_NODE_RANK:-0}}"\n'
    f'export {ENV_NUM_NODES}="${{SKYPILOT_NUM_NODES:-1}}"\n'
    f'export {ENV_NODE_IPS}="${{SKYPILOT_NODE_IPS:-127.0.0.1}}"\n'
    f'export {ENV_MASTER_ADDR}="$(printf \'%s\\n\' "${ENV_NODE_IPS}" | head -n 1)"\n'
    f'export {ENV_MASTER_PORT}={DEFAULT_MASTER_PORT}\n'
)


# What a local job inherits from the daemon's environment: where programs are, who and
# where the user is, the locale and time zone, the temporary directory, the terminal type
# and which GPUs this machine exposes. Nothing else -- the daemon's database URL, SMTP
# password and cloud credentials stay in the daemon (docs/checkpoint-contract.md).
INHERITED_VARS = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE",
                            "TZ", "TMPDIR", "TERM", "CUDA_VISIBLE_DEVICES"})
INHERITED_PREFIXES = ("LC_",)


def inherited_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed part of ``environ`` (see INHERITED_VARS)."""
    return {k: v for k, v in environ.items()
            if k in INHERITED_VARS or k.startswith(INHERITED_PREFIXES)}


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


def node_env(rank: int, ips: Sequence[str], master_port: int) -> dict[str, str]:
    """The node variables of node ``rank`` of ``len(ips)`` (the local executor's)."""
    if not ips or not 0 <= rank < len(ips):
        raise ValueError(f"node rank {rank} of {len(ips)} nodes")
    return {ENV_NODE_RANK: str(rank), ENV_NUM_NODES: str(len(ips)),
            ENV_NODE_IPS: "\n".join(ips), ENV_MASTER_ADDR: ips[0],
            ENV_MASTER_PORT: str(master_port)}


def parse_progress(text: str) -> Progress | None:
    """``{"step": n, "total": m}`` -> Progress; anything else (half-written, junk, numbers
    beyond what the store holds) -> None (a total out of range is dropped alone)."""
    if len(text) > _MAX_PROGRESS_TEXT:
        log.warning("progress ignored: %d characters, at most %d", len(text), _MAX_PROGRESS_TEXT)
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    step, total = data.get("step"), data.get("total")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        return None
    if step > MAX_PROGRESS:
        log.warning("progress ignored: step %s is beyond %d", _short(step), MAX_PROGRESS)
        return None
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        total = None
    elif total > MAX_PROGRESS:
        log.warning("progress total ignored: %s is beyond %d", _short(total), MAX_PROGRESS)
        total = None
    return Progress(step=step, total=total)


def _short(number: int) -> str:
    text = str(number)  # under 4096 digits: the text was bounded
    return text if len(text) <= 30 else f"a {len(text)}-digit number"


def read_progress(path: Path) -> Progress | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_PROGRESS_TEXT + 1)
    except OSError:
        return None
    return parse_progress(raw.decode("utf-8", errors="replace"))
