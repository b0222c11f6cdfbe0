"""The knobs of issue 23 in job files: defaults, and errors naming file, line and field."""

from __future__ import annotations

import pytest

from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.loader import parse_job_spec

TRAIN = "model:\n  name: llama-3.1-8b\nworkload:\n  type: finetune\n  tokens: 1m\n"
INFER = ("model:\n  name: llama-3.1-8b\nworkload:\n  type: inference\n  prompt_tokens: 100\n"
         "  output_tokens: 100\n  requests: 10\n")


def _err(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_job_spec(text, "job.yaml")
    return str(info.value)


def test_inference_defaults_to_vllm_at_its_own_concurrency() -> None:
    w = parse_job_spec(INFER, "job.yaml").workload
    assert (w.engine, w.concurrency, w.gpu_memory_utilization) == ("vllm", None, None)


@pytest.mark.parametrize(("line", "message"), [
    ("  engine: ollama\n", "job.yaml:8 workload.engine: "),
    ("  gpu_memory_utilization: 1.5\n", "job.yaml:8 workload.gpu_memory_utilization: "),
    ("  concurrency: 0\n", "job.yaml:8 workload.concurrency: "),
])
def test_bad_inference_knobs_name_the_line(line: str, message: str) -> None:
    assert message in _err(INFER + line)


@pytest.mark.parametrize(("line", "field"), [
    ("  loss: sparse\n", "workload.loss"),
    ("  optimizer: lion\n", "workload.optimizer"),
    ("  gradient_checkpointing: sometimes\n", "workload.gradient_checkpointing"),
    ("  offload: disk\n", "workload.offload"),
    ("  framework: jax\n", "workload.framework"),
])
def test_bad_training_knobs_name_the_line(line: str, field: str) -> None:
    assert f"job.yaml:6 {field}: " in _err(TRAIN + line)


def test_knobs_of_one_workload_type_are_refused_on_the_other() -> None:
    assert "engine only apply to type: inference" in _err(TRAIN + "  engine: vllm\n")
    assert "loss only apply to type: finetune" in _err(INFER + "  loss: chunked\n")
    assert "offload: params needs sharded parameters" in _err(TRAIN + "  offload: params\n")
    assert "precision must be nf4 or int4" in _err(TRAIN + "  method: qlora\n  precision: fp8\n")
    assert "weights are for inference" in _err(TRAIN + "  method: lora\n  precision: q4_k_m\n")


def test_training_knobs_read_and_framework_defaults_apply() -> None:
    w = parse_job_spec(TRAIN + "  framework: torchtune\n  gradient_checkpointing: true\n"
                       "  optimizer: paged_adamw8bit\n  precision: fp8\n", "job.yaml").workload
    assert w.checkpointing == "full" and w.optimizer == "paged_adamw_8bit"
    assert w.loss_kind == "chunked" and not w.keeps_master_weights and w.fp8_training
    hf = parse_job_spec(TRAIN, "job.yaml").workload
    assert hf.loss_kind == "full" and hf.keeps_master_weights and hf.checkpointing == "none"


def test_model_parallel_defaults_to_none() -> None:
    w = parse_job_spec(TRAIN, "job.yaml").workload
    assert (w.tensor_parallel, w.pipeline_parallel, w.context_parallel,
            w.gradient_accumulation, w.model_parallel) == (1, 1, 1, 1, 1)


@pytest.mark.parametrize(("line", "message"), [
    ("  tensor_parallel: 0\n", "job.yaml:6 workload.tensor_parallel: "),
    ("  pipeline_parallel: two\n", "job.yaml:6 workload.pipeline_parallel: "),
    ("  gradient_accumulation: 0\n", "job.yaml:6 workload.gradient_accumulation: "),
    # llama-3.1-8b: 32 heads, 8 kv heads, 32 layers
    ("  tensor_parallel: 16\n", "job.yaml:6 workload.tensor_parallel: 16 does not divide "
     "llama-3.1-8b's 32 attention heads and 8 kv heads"),
    ("  tensor_parallel: 3\n", "job.yaml:6 workload.tensor_parallel: 3 does not divide"),
    ("  pipeline_parallel: 64\n", "job.yaml:6 workload.pipeline_parallel: 64 stages for "
     "llama-3.1-8b's 32 layers"),
    ("  context_parallel: 3\n  seq_len: 4096\n", "context_parallel: 3 splits each sequence "
     "into 6 chunks: seq_len (4096) must be a multiple of 6"),
])
def test_bad_parallel_knobs_name_the_line(line: str, message: str) -> None:
    assert message in _err(TRAIN + line)


def test_parallel_knobs_are_for_training() -> None:
    assert "tensor_parallel only apply to type: finetune" in _err(
        INFER + "  tensor_parallel: 2\n")


def test_parallel_knobs_that_divide_the_model() -> None:
    w = parse_job_spec(TRAIN + "  tensor_parallel: 8\n  pipeline_parallel: 4\n"
                       "  context_parallel: 2\n  gradient_accumulation: 16\n",
                       "job.yaml").workload
    assert w.model_parallel == 64
