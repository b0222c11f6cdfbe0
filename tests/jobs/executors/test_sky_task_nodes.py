"""The SkyPilot task of a multi-node attempt: num_nodes, and the contract's node variables
mapped from SkyPilot's in the run command (run here by bash, as on a node)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, Placement
from gpuopt.jobs.executors.sky_task import plan_task

THREE_P5 = Placement(cloud="aws", region="us-east-1", zone="us-east-1a",
                     instance_type="p5.48xlarge", gpu="H100", gpu_count=8, use_spot=True,
                     num_nodes=3)
SHOW = ('echo "rank=$GPUOPT_NODE_RANK of=$GPUOPT_NUM_NODES '
        'master=$GPUOPT_MASTER_ADDR:$GPUOPT_MASTER_PORT ips=$(echo $GPUOPT_NODE_IPS)"')


def _run_on_node(tmp: Path, placement: Placement, sky_env: dict[str, str]) -> str:
    plan = plan_task(AttemptSpec(job_id="j", attempt=1, run=SHOW,
                                 checkpoint_dir="s3://b/ckpt", placement=placement),
                     progress_echo_s=0.05)  # (its echo loop ends within that)
    env = {"PATH": os.environ["PATH"], **plan.envs, **sky_env,
           "GPUOPT_PROGRESS_FILE": str(tmp / "progress.json")}
    out = subprocess.run(["bash", "-c", plan.run], env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    return next(line for line in out.stdout.splitlines() if line.startswith("rank="))


def test_the_task_holds_the_nodes_and_each_node_learns_its_rank(tmp_path: Path) -> None:
    plan = plan_task(AttemptSpec(job_id="j", attempt=1, run="true",
                                 checkpoint_dir="s3://b/ckpt", placement=THREE_P5))
    assert plan.num_nodes == 3
    assert plan.instance_type == "p5.48xlarge" and plan.accelerators == {"H100": 8}
    ips = "10.0.0.7\n10.0.0.8\n10.0.0.9"  # SkyPilot: one a line, the head's first
    line = _run_on_node(tmp_path, THREE_P5, {"SKYPILOT_NODE_RANK": "2",
                                             "SKYPILOT_NUM_NODES": "3",
                                             "SKYPILOT_NODE_IPS": ips})
    assert line == "rank=2 of=3 master=10.0.0.7:29500 ips=10.0.0.7 10.0.0.8 10.0.0.9"


def test_one_node_is_rank_0_of_1(tmp_path: Path) -> None:
    one = Placement(cloud="aws", region="us-east-1", instance_type="g5.xlarge", gpu="A10G",
                    gpu_count=1)
    assert plan_task(AttemptSpec(job_id="j", attempt=1, run="true",
                                 checkpoint_dir="s3://b/ckpt", placement=one)).num_nodes == 1
    line = _run_on_node(tmp_path, one, {"SKYPILOT_NODE_RANK": "0", "SKYPILOT_NUM_NODES": "1",
                                        "SKYPILOT_NODE_IPS": "10.1.2.3"})
    assert line == "rank=0 of=1 master=10.1.2.3:29500 ips=10.1.2.3"
