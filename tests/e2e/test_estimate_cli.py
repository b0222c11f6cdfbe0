"""Drive the installed `gpuopt` console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"



def _run(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": columns} if columns else None
    return subprocess.run([*gpuopt_command(), *args], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env=env)


def test_json_shape() -> None:
    res = _run("estimate", str(EXAMPLES / "qlora-7b.yaml"), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) == {"per_gpu_gib", "memory_source", "breakdown", "fits", "does_not_fit"}
    assert doc["memory_source"] == "model"  # nothing measured on this machine
    assert isinstance(doc["per_gpu_gib"], float)
    assert abs(sum(doc["breakdown"].values()) - doc["per_gpu_gib"]) < 0.01
    assert doc["fits"], "a QLoRA 7B job fits somewhere"
    for fit in doc["fits"]:
        assert set(fit) == {"gpu", "count", "per_gpu_gib", "free_gib", "est_hours",
                            "est_hours_p10", "est_hours_p90", "tokens_per_second", "layout",
                            "memory_source", "runtime_source"}
        assert fit["est_hours_p10"] <= fit["est_hours_p90"]
        assert (fit["memory_source"], fit["runtime_source"]) == ("model", "model")
        assert fit["count"] in (1, 2, 4, 8) and fit["free_gib"] >= 0
        assert fit["est_hours"] > 0 and fit["tokens_per_second"] > 0
    for miss in doc["does_not_fit"]:  # the speed is given where the memory does not fit
        assert miss["memory_fits"] is False and miss["est_hours"] > 0


def test_gpu_option_estimates_that_configuration() -> None:
    one = json.loads(_run("estimate", str(EXAMPLES / "inference-70b.yaml"), "--gpu",
                          "H100:8", "--json").stdout)
    assert [f["gpu"] for f in one["fits"]] == ["H100"] and one["fits"][0]["count"] == 8
    assert abs(one["per_gpu_gib"] - one["fits"][0]["per_gpu_gib"]) < 0.01
    assert one["est_hours"] == one["fits"][0]["est_hours"] > 0
    assert one["tokens_per_second"] > 0


def test_faster_gpu_gives_fewer_hours_for_the_same_job() -> None:
    def hours(gpu: str) -> float:
        res = _run("estimate", str(EXAMPLES / "qlora-7b.yaml"), "--gpu", gpu, "--json")
        return float(json.loads(res.stdout)["est_hours"])

    # dense bf16: L4 121 TFLOPS, A100 312 TFLOPS
    assert hours("L4:1") > 2 * hours("A100-40GB:1")


def test_table_output() -> None:
    res = _run("estimate", str(EXAMPLES / "full-13b-zero3.yaml"))
    assert res.returncode == 0, res.stderr
    assert "optimizer" in res.stdout and "A100-80GB" in res.stdout


@pytest.mark.parametrize("body,needle", [
    ("model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n  batch_size: 0\n",
     "job.yaml:5 workload.batch_size: must be >= 1"),
    ("model: [\n", "not valid YAML"),
    ("model:\n  name: llama-9\nworkload:\n  type: inference\n", "job.yaml:2 model.name"),
])
def test_bad_input_exit_2_without_traceback(tmp_path: Path, body: str, needle: str) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(body)
    res = _run("estimate", str(job))
    assert res.returncode == 2
    # rich wraps long lines at the terminal width: compare without whitespace
    assert "".join(needle.split()) in "".join(res.stderr.split()), res.stderr
    assert "Traceback" not in res.stderr + res.stdout


@pytest.mark.parametrize("columns", ["40", "80"])
def test_missing_file_and_bad_gpu(tmp_path: Path, columns: str) -> None:
    # Issue 14: a longer temporary path broke the error line at 80 columns
    # ("...none.yaml: no\nsuch file"); errors are one line at any width, any path length.
    missing = tmp_path.joinpath(*(f"a-long-directory-name-{i}" for i in range(4)), "none.yaml")
    res = _run("estimate", str(missing), columns=columns)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    (line,) = res.stderr.splitlines()
    assert line.startswith("error: ") and f"{missing}: no such file" in line, res.stderr
    res = _run("estimate", str(EXAMPLES / "qlora-7b.yaml"), "--gpu", "B300")
    assert res.returncode == 2 and "unknown GPU" in res.stderr and "Traceback" not in res.stderr


def _hub_env(home: Path, endpoint: str, **extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(HF_HOME=str(home), HF_ENDPOINT=endpoint, HF_HUB_DISABLE_TELEMETRY="1",
               **extra)
    return env


def test_estimate_a_hub_model_not_in_the_table(tmp_path: Path) -> None:
    """`model: {name: Qwen/Qwen3-14B}` is read from a stand-in Hub (HF_ENDPOINT), then
    from huggingface_hub's cache when offline; without a cache, a clear error, exit 2."""
    pytest.importorskip("huggingface_hub")
    from tests.hubstub import standin_hub

    job = tmp_path / "job.yaml"
    job.write_text("model:\n  name: Qwen/Qwen3-14B\nworkload:\n  type: inference\n"
                   "  prompt_tokens: 1000\n  output_tokens: 200\n  requests: 100\n")
    home = tmp_path / "hf"
    with standin_hub() as hub:
        res = subprocess.run([*gpuopt_command(), "estimate", str(job), "--json"],
                             capture_output=True, text=True, timeout=120, cwd=REPO,
                             env=_hub_env(home, hub.url))
        assert res.returncode == 0, res.stderr
        assert any(p.endswith("/Qwen/Qwen3-14B/resolve/main/config.json")
                   for _, p, _ in hub.requests)
    doc = json.loads(res.stdout)
    # Qwen3-14B: 14.77e9 bf16 parameters = 27.5 GiB of weights on one GPU
    assert doc["breakdown"]["weights"] == pytest.approx(14_768_307_200 * 2 / 1024**3,
                                                        abs=0.01)
    assert doc["fits"] and all(f["est_hours"] > 0 for f in doc["fits"])

    offline = subprocess.run([*gpuopt_command(), "estimate", str(job), "--json"],
                             capture_output=True, text=True, timeout=120, cwd=REPO,
                             env=_hub_env(home, "http://127.0.0.1:9", HF_HUB_OFFLINE="1"))
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout) == doc

    empty = subprocess.run([*gpuopt_command(), "estimate", str(job)], capture_output=True,
                           text=True, timeout=120, cwd=REPO,
                           env=_hub_env(tmp_path / "empty", "http://127.0.0.1:9",
                                        HF_HUB_OFFLINE="1", COLUMNS="200"))
    assert empty.returncode == 2
    err = " ".join(empty.stderr.split())
    assert "job.yaml:2 model.name" in err and "Qwen/Qwen3-14B" in err
    assert "config: path/to/config.json" in err


def test_estimate_refuses_a_config_json_of_an_unknown_family(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        (REPO / "tests" / "hub_configs" / "state-spaces--mamba-2.8b-hf.json").read_text())
    job = tmp_path / "job.yaml"
    job.write_text("model:\n  config: config.json\nworkload:\n  type: inference\n"
                   "  prompt_tokens: 10\n  output_tokens: 10\n")
    res = _run("estimate", str(job))
    assert res.returncode == 2
    err = " ".join(res.stderr.split())
    assert "job.yaml:2 model.config" in err and "model_type 'mamba' is not one gpuopt reads" \
        in err


def test_model_parallel_job_is_estimated_on_counts_it_can_run_on(tmp_path: Path) -> None:
    job = tmp_path / "tp.yaml"
    job.write_text("model:\n  name: llama-2-13b\nworkload:\n  type: finetune\n"
                   "  tokens: 100m\n  seq_len: 4096\n  gradient_checkpointing: true\n"
                   "  zero_stage: 1\n  tensor_parallel: 2\n  pipeline_parallel: 2\n"
                   "  gradient_accumulation: 8\nresources:\n  gpus: [A100-80GB]\n")
    doc = json.loads(_run("estimate", str(job), "--json").stdout)
    assert [(f["count"], f["layout"]) for f in doc["fits"]] == [(4, "TP2 PP2")]
