"""What the shared contract suite needs from each executor under test."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from gpuopt.jobs.executors.base import AttemptSpec, AttemptState, AttemptStatus, Executor, Placement

# The SkyPilot executor needs a cloud placement; the fake boundary never reaches it.
SKY_PLACEMENT = Placement(cloud="aws", region="us-east-1", zone="us-east-1a",
                          instance_type="g5.xlarge", gpu="A10G", gpu_count=1, use_spot=True)


@dataclass
class Harness:
    kind: str
    tmp: Path
    new_executor: Callable[[], Executor]  # a fresh instance: what a restarted daemon builds
    placement: Placement
    launches: Callable[[str], int]  # how many times the backend was asked to start it
    extra: dict[str, Any] = field(default_factory=dict)

    def spec(self, job_id: str, run: str, **kw: Any) -> AttemptSpec:
        kw.setdefault("checkpoint_dir", str(self.tmp / "ckpt" / job_id))
        return AttemptSpec(job_id=job_id, attempt=kw.pop("attempt", 1), run=run,
                           placement=self.placement, **kw)


def processes_of(cluster_name: str, under: Path) -> list[psutil.Process]:
    """Live processes of this test's attempt: carrying its GPUOPT_CLUSTER_NAME and working
    (cwd) or checkpointing (GPUOPT_CHECKPOINT_DIR) below ``under``, the test's tmp dir.

    Always scoped: other test runs on the machine (other worktrees, other sessions) start
    attempts under the same cluster names; counting theirs failed the "leaves no process"
    tests 3 runs in 30 on a busy machine (a `sleep` of another session's
    test_stop_cancels_and_leaves_no_process, in its own pytest-N tmp dir)."""
    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            env = proc.environ()
            if env.get("GPUOPT_CLUSTER_NAME") != cluster_name:
                continue
            if not (_below(proc.cwd(), under) or _below(env.get("GPUOPT_CHECKPOINT_DIR"), under)):
                continue
            found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _below(path: str | None, root: Path) -> bool:
    return bool(path) and Path(path).is_relative_to(root)  # not startswith: test_n1/test_n10


def wait_for(
    executor: Executor, name: str, until: Callable[[AttemptStatus], bool], timeout: float = 60
) -> tuple[AttemptStatus, list[AttemptState]]:
    """Poll until ``until(status)``; returns the status and every state seen on the way."""
    seen: list[AttemptState] = []
    deadline = time.monotonic() + timeout
    while True:
        status = executor.poll(name)
        if not seen or seen[-1] is not status.state:
            seen.append(status.state)
        if until(status):
            return status, seen
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: still {status} after {timeout}s (seen {seen})")
        time.sleep(0.05)


def wait_terminal(executor: Executor, name: str, timeout: float = 60) -> tuple[
        AttemptStatus, list[AttemptState]]:
    return wait_for(executor, name, lambda s: s.state.is_terminal, timeout)
