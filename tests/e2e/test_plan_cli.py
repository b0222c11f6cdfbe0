"""`gpuopt plan` through the installed console script, on the embedded price snapshot
(a fresh GPUOPT_HOME from the test fixtures: no config, no store)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]

P5_ONLY = """name: p5-only
model: {name: llama-3-8b}
workload: {type: finetune, method: full, fsdp: true, gradient_checkpointing: true,
           tokens: 500m, batch_size: 4, seq_len: 2048}
resources: {gpus: [H100], clouds: [aws]}
"""


def _run(*args: str, columns: str = "80") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": columns}
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)


def test_h100_on_aws_plans_the_8_gpu_instance_and_lists_the_frontier(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(P5_ONLY, encoding="utf-8")
    res = _run("plan", str(job), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) == {"minimize", "candidates", "frontier", "excluded", "nearest_miss",
                        "advice", "more_nodes"}
    best = doc["candidates"][0]
    assert (best["cloud"], best["gpu"], best["count"]) == ("aws", "H100", 8)
    assert best["instance_type"] == "p5.48xlarge"
    assert doc["frontier"] and all(r["count"] == 8 for r in doc["frontier"])
    assert doc["frontier"][0]["expected_cost"] == best["expected_cost"]
    fastest = _run("plan", str(job), "--json", "--minimize", "time")
    assert fastest.returncode == 0, fastest.stderr
    quick = json.loads(fastest.stdout)["candidates"][0]
    assert quick["expected_hours"] <= best["expected_hours"]


def test_frontier_lines_fit_80_columns(tmp_path: Path) -> None:
    # On the big three clouds the cheapest 8x H100 leaves a faster-for-its-price frontier
    # (with the GPU clouds in, a Vast.ai 8x H100 at $16/h is both cheapest and fastest).
    text = (REPO / "deploy" / "examples" / "full-13b-zero3.yaml").read_text(encoding="utf-8")
    job = tmp_path / "job.yaml"
    job.write_text(text.replace("  spot: auto\n", "  spot: auto\n  clouds: [aws, gcp, azure]\n"),
                   encoding="utf-8")
    res = _run("plan", str(job), "--top", "3")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Frontier"))
    assert all(len(line) <= 80 for line in lines[start:])
    assert any(" h " in line and "$" in line for line in lines[start + 1:])


def test_frontier_lines_of_a_model_parallel_job_fit_80_columns(tmp_path: Path) -> None:
    # "H100 x8 ZeRO-1 x2 TP2 PP2 on-demand cudo no-kristiansand-1" took 84 characters: a
    # line too long names its market and place short (od cudo/no-kristiansand1)
    text = (REPO / "deploy" / "examples" / "full-13b-zero3.yaml").read_text(encoding="utf-8")
    job = tmp_path / "job.yaml"
    job.write_text(text.replace("  zero_stage: 3\n", "  zero_stage: 1\n  tensor_parallel: 2\n"
                                "  pipeline_parallel: 2\n  gradient_accumulation: 8\n"),
                   encoding="utf-8")
    res = _run("plan", str(job), "--top", "3")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Frontier"))
    frontier = [line for line in lines[start + 1:] if " h " in line and "$" in line]
    assert any("TP2 PP2" in line for line in frontier)
    assert all(len(line) <= 80 for line in lines[start:]), lines[start:]


def test_a_fine_tune_without_tokens_is_a_spec_error(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("model: {name: llama-2-7b}\nworkload:\n  type: finetune\n  method: qlora\n",
                   encoding="utf-8")
    res = _run("plan", str(job))
    assert res.returncode == 2
    assert "job.yaml:2 workload: planning a fine-tune needs the amount of work" in res.stderr
    assert "Traceback" not in res.stderr


def test_risk_says_its_number_is_expected_preemptions() -> None:
    """Issue 14: `risk: medium (1.0)` did not say what 1.0 was."""
    res = _run("plan", str(REPO / "deploy" / "examples" / "qlora-7b.yaml"), "--json")
    assert res.returncode == 0, res.stderr
    candidates = json.loads(res.stdout)["candidates"]
    spot = [c for c in candidates if c["market"] == "spot"]
    assert spot, candidates
    for c in candidates:
        if c["market"] != "spot":
            assert c["risk"] == "none"
            continue
        level, _, rest = c["risk"].partition(" ")
        assert level in ("low", "medium", "high")
        assert rest == f"({c['expected_preemptions']:.1f} expected preemptions)", c["risk"]


SMALL_BUDGET = """name: small-budget
model: {name: gpt2}
workload: {type: finetune, method: full, tokens: 5000m, batch_size: 4, seq_len: 1024}
budget: 0.50
"""


def test_too_small_budget_says_the_least_it_takes_on_stderr(tmp_path: Path) -> None:
    """Issue 29.4: exit 3 (fits nowhere, as the README says), the least budget on stderr,
    no empty table; --json carries the same sentence as nearest_miss."""
    job = tmp_path / "job.yaml"
    job.write_text(SMALL_BUDGET)
    res = _run("plan", str(job))
    assert res.returncode == 3, res.stderr
    assert res.stderr.startswith(f"error: {job}: fits nowhere: needs at least $")
    assert "; your budget leaves $0.50" in res.stderr
    assert "0 cheapest placements" not in res.stdout and "no placement within" in res.stdout
    # with no placement, the header still dates the prices as their sources do: the
    # snapshot's oldest and newest source dates, not the oldest alone
    from gpuopt.providers.snapshot import load_snapshot

    days = sorted({o.observed_at.date() for o in load_snapshot().offers})
    header = res.stdout.split("\n", 1)[0]
    assert str(days[0]) in header and str(days[-1]) in header, header
    as_json = _run("plan", str(job), "--json")
    assert as_json.returncode == 3
    miss = json.loads(as_json.stdout)["nearest_miss"]
    assert miss.startswith("needs at least $") and miss in as_json.stderr


RUNPOD_ONLY = """name: runpod-only
model: {name: llama-2-7b}
workload: {type: finetune, method: qlora, tokens: 40m, batch_size: 1, seq_len: 1024,
           gradient_checkpointing: true}
resources: {gpus: [A100-80GB-PCIe], clouds: [runpod], spot: never%s}
"""


def test_runpod_runs_in_its_data_centres_or_the_one_the_job_names(tmp_path: Path) -> None:
    """RunPod prices a type once for its 48 data centres (the snapshot's places): a job
    naming none plans it there (SkyPilot picks one); a job naming one, or a country,
    is placed there."""
    job = tmp_path / "job.yaml"
    job.write_text(RUNPOD_ONLY % "", encoding="utf-8")
    res = _run("plan", str(job), "--json")
    assert res.returncode == 0, res.stderr
    best = json.loads(res.stdout)["candidates"][0]
    assert (best["cloud"], best["region"], best["zone"]) == ("runpod", "global", None)
    assert best["data_centres"] == 48
    table = _run("plan", str(job), columns="140")
    assert "runpod (48 data centres)" in table.stdout
    pick = next(x for x in table.stdout.splitlines() if x.startswith("Pick:"))
    assert "in any of 48 RunPod data centres:" in pick and "global" not in pick, pick
    for regions, where in (("[EU-SE-2, US-GA-1]", ["SE", "EU-SE-2"]), ("[IS]", ["IS", None])):
        job.write_text(RUNPOD_ONLY % f", regions: {regions}", encoding="utf-8")
        res = _run("plan", str(job), "--json")
        assert res.returncode == 0, res.stderr
        best = json.loads(res.stdout)["candidates"][0]
        assert [best["region"], best["zone"]] == where
        assert best["data_centres"] is None and best["price_per_hour"] == 1.39
        assert f"in runpod {where[1] or where[0]}:" in best["reason"], best["reason"]
    job.write_text(RUNPOD_ONLY % ", regions: [us-east-1]", encoding="utf-8")
    assert _run("plan", str(job), "--json").returncode != 0  # no RunPod place there
