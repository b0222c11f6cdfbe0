"""The contract every executor keeps, run against the local executor for real and the
SkyPilot executor over the recording fake of SkyPilot's SDK boundary."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import psutil

from gpuopt.jobs.executors.base import AttemptState, FailureKind
from tests.jobs.executors.harness import Harness, processes_of, wait_for, wait_terminal


def test_success_goes_through_running_and_keeps_the_contract_env(harness: Harness) -> None:
    ex = harness.new_executor()
    spec = harness.spec(
        "okjob", 'echo "hello $GPUOPT_JOB_ID/$GPUOPT_ATTEMPT resume=$GPUOPT_RESUME"\n'
        'env | grep ^GPUOPT_ | sort > "$GPUOPT_CHECKPOINT_DIR/env.txt"\nsleep 1\necho bye',
        attempt=2, resume=True, envs={"USER_VAR": "x", "GPUOPT_ATTEMPT": "spoofed"},
    )
    # The program writes into its checkpoint dir; on a (fake) cluster that dir must exist.
    (harness.tmp / "ckpt" / "okjob").mkdir(parents=True, exist_ok=True)
    assert ex.launch(spec).adopted is False
    status, seen = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED, status
    assert status.exit_code == 0
    assert AttemptState.RUNNING in seen
    assert seen.index(AttemptState.RUNNING) < seen.index(AttemptState.SUCCEEDED)
    env = dict(
        line.split("=", 1)
        for line in (harness.tmp / "ckpt" / "okjob" / "env.txt").read_text().splitlines()
    )
    assert env["GPUOPT_JOB_ID"] == "okjob"
    assert env["GPUOPT_ATTEMPT"] == "2"  # the contract wins over a user's env of that name
    assert env["GPUOPT_RESUME"] == "1"
    assert env["GPUOPT_CHECKPOINT_DIR"] == str(harness.tmp / "ckpt" / "okjob")
    assert env["GPUOPT_PROGRESS_FILE"]
    assert env["GPUOPT_CLUSTER_NAME"] == spec.cluster_name == "gpuopt-okjob-2"


def test_failing_program_is_failed_with_exit_code_and_last_lines(harness: Harness) -> None:
    ex = harness.new_executor()
    spec = harness.spec("badjob", "for i in $(seq 1 40); do echo line-$i; done\nexit 7")
    ex.launch(spec)
    status, seen = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.FAILED
    assert status.failure is FailureKind.PROGRAM
    assert status.exit_code == 7
    assert status.last_lines[-1] == "line-40"
    assert "line-1" not in status.last_lines  # a tail, not the whole log
    assert AttemptState.PREEMPTED not in seen


def test_failing_setup_is_a_setup_failure(harness: Harness) -> None:
    ex = harness.new_executor()
    spec = harness.spec("setupjob", "echo never-runs", setup="echo installing; exit 3")
    ex.launch(spec)
    status, _ = wait_terminal(ex, spec.cluster_name)
    assert status.state is AttemptState.FAILED
    assert status.failure is FailureKind.SETUP
    assert "never-runs" not in "\n".join(ex.logs(spec.cluster_name))


def test_stop_cancels_and_leaves_no_process(harness: Harness) -> None:
    ex = harness.new_executor()
    # A background child and a grandchild that ignores SIGTERM: both must go.
    spec = harness.spec("stopjob", "sleep 60 &\nbash -c 'trap \"\" TERM; sleep 60' &\nsleep 60")
    ex.launch(spec)
    wait_for(ex, spec.cluster_name, lambda s: s.state is AttemptState.RUNNING)
    # All three `sleep 60` started: the grandchild's trap is set (it runs before its sleep).
    deadline = time.monotonic() + 30
    while len(_sleeps(spec.cluster_name, harness.tmp)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleeps(spec.cluster_name, harness.tmp)) == 3
    status = ex.stop(spec.cluster_name)
    assert status.state is AttemptState.CANCELLED
    assert processes_of(spec.cluster_name, harness.tmp) == []
    assert ex.poll(spec.cluster_name).state is AttemptState.CANCELLED
    assert ex.stop(spec.cluster_name).state is AttemptState.CANCELLED  # idempotent


def _sleeps(cluster_name: str, under: Path) -> list[psutil.Process]:
    found = []
    for proc in processes_of(cluster_name, under):
        with contextlib.suppress(psutil.Error):
            if proc.cmdline() == ["sleep", "60"]:  # not the SkyPilot wrapper's own sleeps
                found.append(proc)
    return found


def test_launch_twice_under_one_name_starts_once(harness: Harness) -> None:
    first, second = harness.new_executor(), harness.new_executor()
    spec = harness.spec("twice", 'echo started >> "$GPUOPT_CHECKPOINT_DIR/starts"; sleep 0.5')
    (harness.tmp / "ckpt" / "twice").mkdir(parents=True)
    assert first.launch(spec).adopted is False
    assert first.launch(spec).adopted is True
    assert second.launch(spec).adopted is True  # another daemon, same store
    status, _ = wait_terminal(first, spec.cluster_name)
    assert status.state is AttemptState.SUCCEEDED
    assert harness.launches(spec.cluster_name) == 1
    assert (harness.tmp / "ckpt" / "twice" / "starts").read_text() == "started\n"


def test_restarted_executor_adopts_a_running_attempt_and_sees_its_exit_code(
    harness: Harness,
) -> None:
    before = harness.new_executor()
    spec = harness.spec("adopt", "sleep 1; echo finishing; exit 5")
    before.launch(spec)
    wait_for(before, spec.cluster_name, lambda s: s.state is AttemptState.RUNNING)
    after = harness.new_executor()  # e.g. the daemon restarted; `before` is forgotten
    assert spec.cluster_name in after.list_running()
    assert after.adopt(spec.cluster_name).state is AttemptState.RUNNING
    status, _ = wait_terminal(after, spec.cluster_name)
    assert status.state is AttemptState.FAILED
    assert status.exit_code == 5
    assert status.last_lines[-1] == "finishing"
    assert spec.cluster_name not in after.list_running()


def test_unknown_cluster_is_unknown_not_an_error(harness: Harness) -> None:
    ex = harness.new_executor()
    assert ex.poll("gpuopt-nothing-1").state is AttemptState.UNKNOWN
    assert list(ex.logs("gpuopt-nothing-1")) == []


def test_logs_hold_the_program_output(harness: Harness) -> None:
    ex = harness.new_executor()
    spec = harness.spec("logjob", "echo alpha; echo beta >&2; sleep 0.2; echo gamma")
    ex.launch(spec)
    wait_for(ex, spec.cluster_name, lambda s: s.state is AttemptState.RUNNING)
    lines = list(ex.logs(spec.cluster_name, follow=True))
    assert [x for x in lines if x in ("alpha", "beta", "gamma")] == ["alpha", "beta", "gamma"]
    json.dumps(lines)
