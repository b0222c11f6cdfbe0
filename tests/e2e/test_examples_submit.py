"""Every job in deploy/examples, submitted with each executor: it runs (or plans, with
--dry-run) or it is refused before anything is stored, exit 2, saying what to change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuopt.jobs.executors import sky_client
from gpuopt.orchestrator.cli.app import main
from tests.e2e.cli import gpuopt_command
from tests.jobs.executors.fake_sky import FakeSkyClient, FakeSkyWorld

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "deploy" / "examples").glob("*.yaml"))
BUCKETS = {"qlora-7b": "s3://example-ml-checkpoints/qlora-llama2-7b",
           "full-13b-zero3": "gs://example-ml-checkpoints/full-13b",
           "full-70b-multinode": "s3://example-ml-checkpoints/full-70b",
           "inference-70b": "s3://example-ml-checkpoints/batch-70b"}


def _gpuopt(*args: str, env: dict[str, str] | None = None,
            module: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", module] if module else gpuopt_command()
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "COLUMNS": "100", **(env or {})})


def _nothing_stored() -> None:
    listed = _gpuopt("jobs", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stdout


def test_the_examples_cover_both_executors() -> None:
    assert {p.stem for p in EXAMPLES} == {"quickstart", *BUCKETS}
    for path in EXAMPLES:  # each says which executor it is for
        head = path.read_text().split("\nname:")[0]
        expected = "local executor" if path.stem == "quickstart" else "SkyPilot executor"
        assert expected in head, path.name


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_on_the_local_executor(example: Path) -> None:
    if example.stem == "quickstart":  # runs locally (the full run: test_submit_cli.py)
        res = _gpuopt("submit", str(example), "--executor", "local", "--dry-run")
        assert res.returncode == 0, res.stdout + res.stderr
        return
    res = _gpuopt("submit", str(example), "--executor", "local")
    assert res.returncode == 2, res.stdout + res.stderr
    err = " ".join(res.stderr.split())
    assert f"{example.name}:" in err and "checkpoint.dir:" in err
    assert BUCKETS[example.stem] in err and "the local executor cannot use" in err
    assert "set checkpoint.dir to a directory" in err and "--executor skypilot" in err
    assert "Traceback" not in res.stderr
    _nothing_stored()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_each_example_on_skypilot_dry_run_prints_the_task(example: Path, tmp_path: Path
                                                          ) -> None:
    """The real sky.Task, validated by SkyPilot against a catalog cache (throwaway HOME)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKY", "AWS_"))}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"))
    res = subprocess.run(
        [sys.executable, "-m", "tests.e2e.sky_submit_probe", "submit", str(example),
         "--executor", "skypilot", "--dry-run"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env={**env, "COLUMNS": "100"})
    if example.stem == "quickstart":
        assert res.returncode == 2, res.stdout + res.stderr
        err = " ".join(res.stderr.split())
        assert "quickstart.yaml:" in err and "'./checkpoints/quickstart' is not a bucket" in err
        assert "set checkpoint.dir to a bucket" in err and "--executor local" in err
        return
    assert res.returncode == 0, res.stdout + res.stderr
    task = res.stdout.split("# SkyPilot task of attempt 1 on ", 1)[1]
    assert "\nresources:\n  infra: " in task and "\nrun: " in task
    # SkyPilot mounts the bucket's root; the job's prefix is a directory under it
    bucket, prefix = BUCKETS[example.stem].rsplit("/", 1)
    assert f"source: {bucket}\n" in task and "mode: MOUNT_CACHED" in task
    assert f"GPUOPT_CHECKPOINT_DIR: /gpuopt/checkpoint/{prefix}\n" in task
    assert "dry run: nothing stored" in res.stdout
    # every task maps SkyPilot's node variables to the contract's; only the 70B example
    # needs more than one node (ZeRO-3 over 24+ GPUs), and its task says how many
    assert 'GPUOPT_NODE_RANK=\\"${SKYPILOT_NODE_RANK:-0}\\"' in task
    multi = example.stem == "full-70b-multinode"
    nodes = [int(line.split()[1]) for line in task.splitlines()
             if line.startswith("num_nodes:")]
    assert (nodes[0] >= 3) if multi else (nodes in ([], [1])), nodes


def _fake_sky(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *enabled: str) -> FakeSkyWorld:
    world = FakeSkyWorld(tmp_path, enabled=enabled)
    monkeypatch.setattr(sky_client, "default_client", lambda: FakeSkyClient(world))
    return world


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, " ".join(captured.err.split())


def test_skypilot_submit_asks_skypilot_once_and_stores_the_job(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    world = _fake_sky(monkeypatch, tmp_path, "aws", "gcp")
    code, out, err = _main(["submit", str(REPO / "deploy/examples/qlora-7b.yaml"),
                            "--executor", "skypilot"], capsys)
    assert code == 0, err
    assert "(queued, executor skypilot)" in out
    assert len(world.calls_named("enabled_clouds")) == 1
    assert world.calls_named("launch") == []  # submit only queues


@pytest.mark.parametrize("example", [p for p in EXAMPLES if p.stem != "quickstart"],
                         ids=lambda p: p.stem)
def test_skypilot_without_an_enabled_cloud_is_refused(
        example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _fake_sky(monkeypatch, tmp_path)
    code, _, err = _main(["submit", str(example), "--executor", "skypilot"], capsys)
    assert code == 2
    assert "SkyPilot has no cloud enabled that the job may use" in err
    assert "enabled in SkyPilot: none" in err and "run `sky check`" in err
    _nothing_stored()


def test_a_job_limited_to_clouds_skypilot_has_not_enabled_is_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _fake_sky(monkeypatch, tmp_path, "azure", "kubernetes")
    code, _, err = _main(["submit", str(REPO / "deploy/examples/qlora-7b.yaml"),
                          "--executor", "skypilot"], capsys)
    assert code == 2
    qlora = (REPO / "deploy/examples/qlora-7b.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(qlora, 1) if text.strip().startswith("clouds:"))
    assert f"qlora-7b.yaml:{line}: SkyPilot has no cloud enabled that the job may use " in err
    assert "(job: aws, gcp; enabled in SkyPilot: azure, kubernetes)" in err
    assert "or allow another in resources.clouds" in err


def test_file_mounts_are_refused_on_the_local_executor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "mounts.yaml"
    job.write_text("name: m\nrun: cat /data/x\nfile_mounts:\n  /data/x: s3://b/x\n"
                   "model:\n  name: gpt2\nworkload:\n  type: finetune\n  method: full\n"
                   "  tokens: 1m\n")
    code, _, err = _main(["submit", str(job), "--executor", "local"], capsys)
    assert code == 2
    assert "mounts.yaml:3 file_mounts: the local executor neither copies nor mounts" in err
    _nothing_stored()
