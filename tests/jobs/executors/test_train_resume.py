"""The example training job under the local executor: preempted 3 times at seeded random
points, resumed as attempts 2, 3, 4 from its checkpoints, it ends with exactly the result
of an uninterrupted run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from gpuopt.jobs.executors.base import AttemptSpec, AttemptState
from gpuopt.jobs.executors.fault_injection import PreemptAtTimes, seeded_times
from gpuopt.jobs.executors.local import LocalExecutor
from tests.conftest import REPO_ROOT
from tests.jobs.executors.harness import wait_terminal

SCRIPT = REPO_ROOT / "deploy" / "examples" / "train_counter.py"
STEPS, SLEEP = 1400, 0.005  # >= 7 s of training; a checkpoint every 20 steps (~0.1 s)
RUN = (f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} "
       f"--steps {STEPS} --every 20 --sleep {SLEEP}")
# Three preemptions of at most 2 s of work each (6 s) cannot finish the 7 s of
# training, so every one of them lands before the end, wherever the seed puts it. On a
# loaded machine an attempt may be preempted before its program printed a line (the
# supervisor and the interpreter start first): that is still a preemption, and the next
# attempt resumes from the same checkpoint.
LOW, HIGH = 1.0, 2.0


def _run_job(tmp: Path, job_id: str, preemption: PreemptAtTimes | None) -> tuple[dict, list]:
    ex = LocalExecutor(tmp / "attempts", preemption=preemption)
    ckpt = tmp / "ckpt" / job_id
    outcomes = []
    for attempt in range(1, 10):
        spec = AttemptSpec(job_id=job_id, attempt=attempt, run=RUN, checkpoint_dir=str(ckpt),
                           resume=attempt > 1)
        ex.launch(spec)
        status, _ = wait_terminal(ex, spec.cluster_name)
        log = list(ex.logs(spec.cluster_name))
        outcomes.append((status, log))
        if status.state is not AttemptState.PREEMPTED:
            break
    return json.loads((ckpt / "result.json").read_text()), outcomes


def test_preempted_three_times_ends_exactly_like_an_uninterrupted_run(tmp_path: Path) -> None:
    reference, plain = _run_job(tmp_path, "plain", None)
    assert [s.state for s, _ in plain] == [AttemptState.SUCCEEDED]

    times = seeded_times(seed=20240611, count=3, low=LOW, high=HIGH)
    assert 3 * HIGH < STEPS * SLEEP
    result, outcomes = _run_job(tmp_path, "bumpy", PreemptAtTimes(times))

    states = [s.state for s, _ in outcomes]
    assert states == [AttemptState.PREEMPTED] * 3 + [AttemptState.SUCCEEDED]
    resumed_from = []
    for status, log in outcomes[1:]:
        if not log:
            continue  # preempted before its program printed anything (see LOW)
        first = log[0]
        assert first.startswith(f"attempt {status.cluster_name.rsplit('-', 1)[1]}:"), first
        if "resuming from step" in first:
            resumed_from.append(int(first.rsplit(" ", 1)[1]))
    assert resumed_from and max(resumed_from) > 0  # really resumed mid-way
    assert resumed_from == sorted(resumed_from)  # never went back
    assert result == reference  # bit-for-bit: weights and loss as float.hex
    assert result["steps"] == STEPS
