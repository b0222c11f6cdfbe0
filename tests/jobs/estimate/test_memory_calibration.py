"""The estimator against every measured peak in shared/data/memory-calibration.md.

The rows are encoded here as data. What each measurement includes:
- litgpt (resource-tables.md, quantize.md) prints torch.cuda.max_memory_allocated in
  GB = 1e9 bytes. Alpaca's longest sample is 1304 tokens; litgpt pads a batch to its
  longest sample, so the peak batch of 1 or 2 has seq 1304. Inference rows run a short
  prompt (~10 tokens) plus 50 new tokens (256 for Falcon), with a KV cache sized to
  prompt + new tokens (generate/base.py sets max_seq_length = max_returned_tokens).
- torchtune reports max reserved (GB).
- vLLM's profile splits its 0.90 x 39.5 GiB budget into weights, peak activations of a
  dummy 8192-token prefill, non-torch memory and the KV cache that fills what is left;
  the KV cache is not a need of the job, so weights + activations + non-torch is compared
  with the estimate without its KV cache.
The estimate is the device-level peak (it includes CUDA context and allocator slack);
allocated/reserved measurements are lower bounds of that, so the estimate's total is
compared with them (the `alloc-only` column shows the estimate without those terms).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.spec import WorkloadSpec

GB = 1e9
GIB = 1024**3
ALPACA_MAX = 1304


@dataclass(frozen=True)
class Row:
    label: str
    model: str
    workload: dict[str, Any]
    measured_bytes: float
    exclude_kv: bool = False
    known_gap: str | None = None


def _ft(**kw: Any) -> dict[str, Any]:
    # the rows' framework, for what it does to memory (PEFT's fp32 casts: hf, deepspeed)
    return {"type": "finetune", "seq_len": ALPACA_MAX, "framework": "litgpt", **kw}


def _inf(new: int, **kw: Any) -> dict[str, Any]:
    # litgpt's generate: one sequence, PyTorch's allocator (engine hf)
    return {"type": "inference", "prompt_tokens": 10, "output_tokens": new, "engine": "hf",
            **kw}


ROWS = (
    Row("litgpt L2-7B LoRA bf16 1x", "llama-2-7b", _ft(method="lora"), 21.30 * GB),
    Row("litgpt L2-7B QLoRA nf4 1x", "llama-2-7b", _ft(method="qlora"), 14.14 * GB),
    Row("litgpt L2-7B QLoRA nf4-dq 1x", "llama-2-7b", _ft(method="qlora", double_quant=True),
        13.84 * GB),
    Row("litgpt L2-7B LoRA bf16 2x", "llama-2-7b", _ft(method="lora", batch_size=2), 29.07 * GB),
    Row("litgpt L2-13B LoRA bf16 1x", "llama-2-13b", _ft(method="lora"), 38.12 * GB),
    Row("litgpt L2-13B QLoRA nf4-dq 1x", "llama-2-13b", _ft(method="qlora", double_quant=True),
        22.55 * GB),
    Row("litgpt L2-7B infer bf16", "llama-2-7b", _inf(50), 13.52 * GB),
    Row("litgpt L2-13B infer bf16", "llama-2-13b", _inf(50), 26.21 * GB),
    Row("litgpt L2-7B infer nf4-dq", "llama-2-7b", _inf(50, precision="nf4", double_quant=True),
        4.26 * GB),
    Row("litgpt L2-13B infer nf4-dq", "llama-2-13b",
        _inf(50, precision="nf4", double_quant=True), 7.72 * GB),
    Row("litgpt F-7B infer fp32", "falcon-7b", _inf(256, precision="fp32"), 28.95 * GB),
    Row("litgpt F-7B infer bf16", "falcon-7b", _inf(256, precision="bf16"), 14.50 * GB),
    Row("litgpt F-7B infer int8", "falcon-7b", _inf(256, precision="int8"), 8.70 * GB),
    Row("litgpt F-7B infer nf4", "falcon-7b", _inf(256, precision="nf4"), 5.72 * GB),
    Row("litgpt F-7B infer nf4-dq", "falcon-7b", _inf(256, precision="nf4", double_quant=True),
        5.38 * GB),
    # torchtune's QLoRA tutorial ran its April 2024 configs: Alpaca truncated to 512
    # tokens, the full cross-entropy, QLoRA adapters on q, k, v, o and the MLP
    Row("torchtune L2-7B LoRA gc 2x", "llama-2-7b",
        _ft(method="lora", batch_size=2, gradient_checkpointing=True, framework="torchtune",
            seq_len=512, loss="full"),
        15.57 * GB),
    Row("torchtune L2-7B QLoRA gc 2x", "llama-2-7b",
        _ft(method="qlora", batch_size=2, gradient_checkpointing=True, framework="torchtune",
            seq_len=512, loss="full", lora_targets=["q_proj", "k_proj", "v_proj", "o_proj",
                                                    "gate_proj", "up_proj", "down_proj"],
            framework_version="0.1"),
        # the reservation torchao 0.1's NF4 model build leaves (9.13 GB after init, same
        # table) and the step reuses: the load phase (memory/load.py)
        9.29 * GB),
    Row("vLLM L3-8B profile 8192", "llama-3-8b",
        # vLLM V0 without chunked prefill: the step's token budget is max_model_len
        {"type": "inference", "prompt_tokens": 8192, "output_tokens": 0,
         "max_batched_tokens": 8192, "concurrency": 1},
        (14.96 + 9.37 + 0.10) * GIB, exclude_kv=True),
)


def _estimate(row: Row) -> tuple[float, float]:
    est = estimate_memory(ARCHITECTURES[row.model], WorkloadSpec(**row.workload), 1)
    kv = est.components["kv_cache"] if row.exclude_kv else 0
    return est.total_bytes - kv, est.allocated_bytes - kv


def _table() -> str:
    lines = [f"{'row':32s} {'measured GB':>11s} {'estimate GB':>11s} {'error':>7s} "
             f"{'alloc-only':>10s}"]
    for row in ROWS:
        total, alloc = _estimate(row)
        lines.append(
            f"{row.label:32s} {row.measured_bytes / GB:11.2f} {total / GB:11.2f} "
            f"{100 * (total / row.measured_bytes - 1):+6.1f}% "
            f"{100 * (alloc / row.measured_bytes - 1):+9.1f}%"
            + ("  (known gap)" if row.known_gap else "")
        )
    return "\n".join(lines)


def test_print_calibration_table() -> None:
    print("\n" + _table())


@pytest.mark.parametrize("row", ROWS, ids=[r.label for r in ROWS])
def test_within_tolerance(row: Row) -> None:
    total, _ = _estimate(row)
    ratio = total / row.measured_bytes
    ok = 0.90 <= ratio <= 1.20
    if row.known_gap:
        if ok:
            pytest.fail(f"known gap closed, remove the marker: {row.label}\n{_table()}")
        pytest.xfail(row.known_gap)
    assert ok, f"{row.label}: estimate/measured = {ratio:.3f}\n{_table()}"
