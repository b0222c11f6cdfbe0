"""`gpuopt submit / jobs / status / logs / cancel` through the installed console script,
each test in a fresh GPUOPT_HOME (no config, no cloud: the embedded price snapshot)."""

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
QUICKSTART = REPO / "deploy" / "examples" / "quickstart.yaml"



def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


def test_dry_run_stores_nothing() -> None:
    res = _run("submit", str(QUICKSTART), "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "dry run: nothing stored" in res.stdout
    assert not (Path(os.environ["GPUOPT_HOME"]) / "data" / "gpuopt.db").exists()
    listed = _run("jobs", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_job_that_fits_nowhere_is_refused_with_the_nearest_miss(tmp_path: Path) -> None:
    job = tmp_path / "huge.yaml"
    job.write_text(
        "name: huge\nrun: echo hi\nmodel:\n  params: 70b\nworkload:\n  type: finetune\n"
        "  method: full\n  tokens: 1m\nresources:\n  gpus: [T4]\n  max_gpus_per_node: 1\n"
    )
    res = _run("submit", str(job))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "fits nowhere" in res.stderr and "GiB" in res.stderr
    assert "Traceback" not in res.stderr
    listed = _run("jobs", "--json")
    assert json.loads(listed.stdout) == []


def test_unknown_job_id_exits_2() -> None:
    for cmd in (("status", "nope-123"), ("logs", "nope-123"), ("cancel", "nope-123")):
        res = _run(*cmd)
        assert res.returncode == 2, (cmd, res.stderr)
        assert "no job 'nope-123'" in res.stderr


def test_readme_demo_runs_locally_to_success() -> None:
    """`gpuopt submit deploy/examples/quickstart.yaml --wait` on a fresh machine."""
    res = _run("submit", "deploy/examples/quickstart.yaml", "--wait", timeout=90)
    match = re.search(r"submitted (\S+)", res.stdout)
    assert match, res.stdout + res.stderr
    job_id = match.group(1)
    ckpt = REPO / "deploy" / "examples" / "checkpoints" / "quickstart" / job_id
    try:
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"{job_id} succeeded: 1 attempt(s)" in res.stdout
        assert "simulated cost (local executor" in res.stdout
        result = json.loads((ckpt / "result.json").read_text())
        assert result["steps"] == 600

        status = json.loads(_run("status", job_id, "--json").stdout)
        assert status["status"] == "succeeded" and status["progress"] == {
            "step": 600, "total": 600}
        (attempt,) = status["attempt_list"]
        assert attempt["end_reason"] == "succeeded" and attempt["cost"] == status["cost"]
        listed = json.loads(_run("jobs", "--json").stdout)
        assert [j["id"] for j in listed] == [job_id]
        logs = _run("logs", job_id)
        assert logs.returncode == 0 and "done: loss" in logs.stdout
    finally:
        shutil.rmtree(ckpt, ignore_errors=True)
        for parent in (ckpt.parent, ckpt.parent.parent):
            with contextlib.suppress(OSError):
                parent.rmdir()


def test_a_checkpoint_skypilot_cannot_mount_is_refused_at_submit(tmp_path: Path) -> None:
    job = tmp_path / "az.yaml"
    job.write_text(
        "name: az\nrun: echo hi\nmodel:\n  name: gpt2\nworkload:\n  type: finetune\n"
        "  tokens: 1m\ncheckpoint:\n  dir: az://team/ckpt\n", encoding="utf-8")
    res = _run("submit", str(job), "--executor", "skypilot")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "checkpoint.dir az://team/ckpt: SkyPilot cannot mount az://" in res.stderr
    assert "Traceback" not in res.stderr
    assert json.loads(_run("jobs", "--json").stdout) == []


def test_jobs_filters_by_status_owner_team_and_limit(tmp_path: Path) -> None:
    """Issue 14: `jobs --status/--owner/--team/--limit` (submitted jobs stay queued: no
    daemon runs here)."""
    text = QUICKSTART.read_text()
    ids = []
    for name, owner, team in (("one", "ann@example.com", "nlp"), ("two", "bob@example.com",
                              "nlp"), ("three", "ann@example.com", "vision")):
        job = tmp_path / f"{name}.yaml"
        job.write_text(text.replace("name: quickstart-train-counter", f"name: {name}")
                       .replace("owner: demo@example.com", f"owner: {owner}")
                       .replace("team: quickstart", f"team: {team}"), encoding="utf-8")
        res = _run("submit", str(job))
        assert res.returncode == 0, res.stdout + res.stderr
        match = re.search(r"submitted (\S+)", res.stdout)
        assert match, res.stdout
        ids.append(match.group(1))

    def listed(*args: str) -> list[str]:
        res = _run("jobs", "--json", *args)
        assert res.returncode == 0, res.stderr
        return sorted(j["id"] for j in json.loads(res.stdout))

    assert listed() == sorted(ids)
    assert listed("--team", "nlp") == sorted(ids[:2])
    assert listed("--owner", "ann@example.com") == sorted([ids[0], ids[2]])
    assert listed("--owner", "ann@example.com", "--team", "nlp") == [ids[0]]
    assert listed("--status", "queued") == sorted(ids)
    assert listed("--status", "live") == sorted(ids)
    assert listed("--status", "succeeded") == []
    assert listed("--limit", "1") == [ids[2]]  # the newest
    none = _run("jobs", "--team", "nobody")
    assert none.returncode == 0 and none.stdout.strip() == "no jobs match these filters"
