"""A multi-node attempt on the local executor: N contained processes with the node
contract; a preemption of one node is one preemption, every node restarts from the last
checkpoint, and the job ends with exactly the result of an undisturbed run."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, AttemptState, Placement
from gpuopt.jobs.executors.fault_injection import PreemptAtTimes
from gpuopt.jobs.executors.local import LocalExecutor
from tests.conftest import REPO_ROOT
from tests.jobs.executors.harness import processes_of, wait_for, wait_terminal

SCRIPT = REPO_ROOT / "deploy" / "examples" / "train_nodes.py"
STEPS, SLEEP = 800, 0.005  # >= 4 s of training; a checkpoint every 25 steps
RUN = (f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} "
       f"--steps {STEPS} --every 25 --sleep {SLEEP}")
TWO_NODES = Placement(cloud="aws", region="us-east-1", instance_type="p5.48xlarge",
                      gpu="H100", gpu_count=8, num_nodes=2)


def _spec(tmp: Path, job_id: str, attempt: int, run: str = RUN) -> AttemptSpec:
    return AttemptSpec(job_id=job_id, attempt=attempt, run=run,
                       checkpoint_dir=str(tmp / "ckpt" / job_id), resume=attempt > 1,
                       placement=TWO_NODES)


def _run_job(tmp: Path, job_id: str, preemption: PreemptAtTimes | None
             ) -> tuple[dict[str, object], list[tuple[AttemptState, str, list[str]]]]:
    ex = LocalExecutor(tmp / "attempts", preemption=preemption, telemetry_interval=None)
    outcomes = []
    for attempt in range(1, 6):
        spec = _spec(tmp, job_id, attempt)
        ex.launch(spec)
        status, _ = wait_terminal(ex, spec.cluster_name, timeout=120)
        outcomes.append((status.state, status.detail, list(ex.logs(spec.cluster_name))))
        if status.state is AttemptState.PREEMPTED:  # every node went down with it
            assert processes_of(spec.cluster_name, tmp) == []
        ex.stop(spec.cluster_name)  # as the reconcile loop does: what is left, waited for
        assert processes_of(spec.cluster_name, tmp) == []
        if status.state is not AttemptState.PREEMPTED:
            break
    result = json.loads((tmp / "ckpt" / job_id / "result.json").read_text())
    return result, outcomes


def test_two_nodes_survive_a_preemption_with_the_undisturbed_result(tmp_path: Path) -> None:
    reference, plain = _run_job(tmp_path, "plain", None)
    assert [s for s, _, _ in plain] == [AttemptState.SUCCEEDED]
    log = plain[0][2]
    assert {line for line in log if line.endswith("starting")} == {
        "node 0 attempt 1: starting", "node 1 attempt 1: starting"}
    assert reference["nodes"] == 2 and reference["steps"] == STEPS

    # 1.5 s in: after the first checkpoints (every 25 steps, ~0.15 s), before the end
    result, outcomes = _run_job(tmp_path, "bumpy", PreemptAtTimes((1.5,)))
    assert [s for s, _, _ in outcomes] == [AttemptState.PREEMPTED, AttemptState.SUCCEEDED]
    assert outcomes[0][1] == "node 1 of 2 preempted by the preemption drill: all stopped"
    second = outcomes[1][2]
    resumed = [line for line in second if "attempt 2: resuming from step" in line]
    assert len(resumed) == 2, second  # both nodes restarted, from the same checkpoint
    assert len({line.rsplit(" ", 1)[1] for line in resumed}) == 1
    assert int(resumed[0].rsplit(" ", 1)[1]) > 0
    assert result == reference  # bit for bit


def test_every_node_gets_the_contract(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "attempts", telemetry_interval=None)
    show = ('echo "rank=$GPUOPT_NODE_RANK of=$GPUOPT_NUM_NODES master=$GPUOPT_MASTER_ADDR:'
            '$GPUOPT_MASTER_PORT ips=$(echo $GPUOPT_NODE_IPS)"')
    spec = _spec(tmp_path, "env", 1, show)
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED
    lines = sorted(line for line in ex.logs(spec.cluster_name) if line.startswith("rank="))
    assert [line.split()[0] for line in lines] == ["rank=0", "rank=1"]
    assert {" ".join(line.split()[1:3]) for line in lines} == {
        f"of=2 master=127.0.0.1:{lines[0].split(':')[1].split()[0]}"}
    assert all(line.endswith("ips=127.0.0.1 127.0.0.1") for line in lines)


def test_one_failed_node_fails_the_attempt_and_stops_the_others(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "attempts", telemetry_interval=None)
    run = 'if [ "$GPUOPT_NODE_RANK" = 1 ]; then exit 7; fi; exec sleep 300'
    spec = _spec(tmp_path, "fail", 1, run)
    started = time.monotonic()
    ex.launch(spec)
    status, _ = wait_for(ex, spec.cluster_name, lambda s: s.state.is_terminal, timeout=60)
    assert status.state is AttemptState.FAILED and status.exit_code == 7
    assert time.monotonic() - started < 30  # the healthy node did not run its 300 s
    assert any("node 1 exited with code 7" in line for line in status.last_lines)
    ex.stop(spec.cluster_name)
    assert processes_of(spec.cluster_name, tmp_path) == []
