"""`gpuopt submit --wait --preempt-after` on a job the planner puts on 2 nodes: the local
executor runs both nodes, the drill preempts the attempt once (one preemption however
many nodes), attempt 2 restarts both from the checkpoint, and the result is the one an
undisturbed 2-node run gets."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "examples" / "train_nodes.py"
# Llama-3-70B full fine-tune: ~1.1 TB of training state fits 2 nodes of 8 x H200 (141 GB)
# and not one; on AWS p5e/p5en (EFA). The run is the tiny 2-node trainer (~5 s of work,
# a checkpoint every ~0.13 s).
JOB = """name: {name}
model: {{name: llama-3-70b}}
workload: {{type: finetune, method: full, zero_stage: 3, gradient_checkpointing: true,
           batch_size: 1, seq_len: 4096, tokens: 50m}}
resources: {{gpus: [H200], clouds: [aws], max_nodes: 2, spot: never}}
checkpoint: {{dir: {ckpt}, interval: 1m}}
run: {run}
"""


def _submit(tmp: Path, name: str, *drill: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    run = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} --steps 1000 --every 25"
    job = tmp / f"{name}.yaml"
    job.write_text(JOB.format(name=name, ckpt=tmp / "ckpt", run=json.dumps(run)),
                   encoding="utf-8")
    res = subprocess.run([*gpuopt_command(), "submit", str(job), "--executor", "local",
                          "--wait", *drill], capture_output=True, text=True, timeout=300,
                         cwd=REPO, env={**os.environ, "COLUMNS": "200"})
    match = re.search(r"submitted (\S+)", res.stdout)
    assert match, res.stdout + res.stderr
    return match.group(1), res


def _status(job_id: str) -> dict[str, object]:
    out = subprocess.run([*gpuopt_command(), "status", job_id, "--json"], capture_output=True,
                         text=True, timeout=120, cwd=REPO, env={**os.environ})
    doc: dict[str, object] = json.loads(out.stdout)
    return doc


def test_a_two_node_job_survives_the_drill_with_the_undisturbed_result(tmp_path: Path) -> None:
    plain_id, plain = _submit(tmp_path, "plain")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "2x8xH200" in plain.stdout  # the plan: two nodes
    assert f"{plain_id} succeeded: 1 attempt(s), 0 preemption(s)" in plain.stdout

    job_id, res = _submit(tmp_path, "drill", "--preempt-after", "2.5s")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{job_id} succeeded: 2 attempt(s), 1 preemption(s)" in res.stdout
    attempts = _status(job_id)["attempt_list"]
    assert isinstance(attempts, list)
    assert [(a["end_reason"], a["num_nodes"]) for a in attempts] == [
        ("preempted", 2), ("succeeded", 2)]
    logs = subprocess.run([*gpuopt_command(), "logs", job_id, "--attempt", "2"],
                          capture_output=True, text=True, timeout=120, cwd=REPO).stdout
    resumed = re.findall(r"node (\d) attempt 2: resuming from step (\d+)", logs)
    assert sorted(r for r, _ in resumed) == ["0", "1"] and int(resumed[0][1]) > 0
    result = json.loads((tmp_path / "ckpt" / job_id / "result.json").read_text())
    reference = json.loads((tmp_path / "ckpt" / plain_id / "result.json").read_text())
    assert result == reference and result["nodes"] == 2
