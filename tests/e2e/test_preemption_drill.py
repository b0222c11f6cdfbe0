"""`gpuopt submit quickstart.yaml --wait --preempt-after 4s`: the README's drill, end to end.

The local executor kills attempt 1 four seconds after it starts (the whole process group,
as a spot reclaim would); the attempt ends as preempted, attempt 2 resumes from the
checkpoint, and the job succeeds with the same result as an undisturbed run. The demo
needs 6 s of paced work (600 steps x 0.01 s) and checkpoints every 20 steps, so attempt 1
is always preempted mid-run, after it checkpointed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env={**os.environ, "COLUMNS": "200"})


def test_quickstart_drill_preempts_once_and_resumes_from_the_checkpoint() -> None:
    res = _run("submit", "deploy/examples/quickstart.yaml", "--wait", "--preempt-after", "4s")
    match = re.search(r"submitted (\S+)", res.stdout)
    assert match, res.stdout + res.stderr
    job_id = match.group(1)
    ckpt = REPO / "deploy" / "examples" / "checkpoints" / "quickstart" / job_id
    try:
        assert res.returncode == 0, res.stdout + res.stderr
        assert "preemption drill: attempt 1 after 4 s\n" in res.stdout
        assert f"{job_id} succeeded: 2 attempt(s), 1 preemption(s)" in res.stdout
        status = json.loads(_run("status", job_id, "--json").stdout)
        assert status["status"] == "succeeded"
        first, second = status["attempt_list"]
        assert (first["end_reason"], second["end_reason"]) == ("preempted", "succeeded")
        resumed = re.search(r"attempt 2: resuming from step (\d+)",
                            _run("logs", job_id, "--attempt", "2").stdout)
        assert resumed and int(resumed.group(1)) > 0
        assert json.loads((ckpt / "result.json").read_text())["steps"] == 600
    finally:
        shutil.rmtree(ckpt, ignore_errors=True)
        for parent in (ckpt.parent, ckpt.parent.parent):
            with contextlib.suppress(OSError):
                parent.rmdir()


def test_the_drill_is_refused_for_skypilot_and_when_malformed() -> None:
    for args, needle in (
        (("--executor", "skypilot"), "local executor only"),
        (("--executor", "local"), "is not a duration"),
    ):
        value = "20s" if "skypilot" in args else "20s,soon"
        res = _run("submit", "deploy/examples/quickstart.yaml", *args, "--preempt-after", value)
        assert res.returncode == 2, res.stdout + res.stderr
        assert needle in res.stderr and "Traceback" not in res.stderr
    listed = _run("jobs", "--json")
    assert json.loads(listed.stdout) == []
