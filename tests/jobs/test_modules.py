"""LoRA targets by the model's own module names, adapter sizes on the real shapes."""

from __future__ import annotations

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES
from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.estimate.memory.training import lora_params
from gpuopt.jobs.loader import parse_job_spec


@pytest.mark.parametrize(("model", "targets", "expected"), [
    # PEFT's own printouts: falcon-7b r8 on query_key_value, gpt2 r8 on c_attn
    ("falcon-7b", ("query_key_value",), 8 * (4544 + 4544 + 2 * 64) * 32),  # 2,359,296
    ("gpt2", ("c_attn",), 8 * (768 + 3 * 768) * 12),  # 294,912
    # GPT-2's c_proj names the attention output and the MLP down projection: both
    ("gpt2", ("c_proj",), 8 * ((768 + 768) + (3072 + 768)) * 12),
    ("gpt2", ("c_fc",), 8 * (768 + 3072) * 12),
    ("opt-1.3b", ("q_proj", "out_proj", "fc1", "fc2"),
     8 * ((2048 + 2048) * 2 + (2048 + 8192) * 2) * 24),
    ("phi-3-mini", ("qkv_proj", "gate_up_proj"),
     8 * ((3072 + 3 * 3072) + (3072 + 2 * 8192)) * 32),
    ("llama-2-7b", ("q_proj", "v_proj"), 8 * (4096 + 4096) * 2 * 32),  # 4,194,304
])
def test_adapter_sizes_on_the_real_shapes(model: str, targets: tuple[str, ...],
                                          expected: int) -> None:
    assert lora_params(ARCHITECTURES[model], targets, 8) == expected


def test_llama_style_names_map_to_the_fused_native_module() -> None:
    falcon = ARCHITECTURES["falcon-7b"]
    # q_proj, k_proj, v_proj all live in query_key_value: one adapter, not three
    assert lora_params(falcon, ("q_proj", "k_proj", "v_proj"), 8) == lora_params(
        falcon, ("query_key_value",), 8)
    assert lora_params(falcon, ("o_proj", "up_proj", "down_proj"), 8) == lora_params(
        falcon, ("dense", "dense_h_to_4h", "dense_4h_to_h"), 8)
    phi = ARCHITECTURES["phi-3-mini"]
    assert lora_params(phi, ("gate_proj",), 8) == lora_params(phi, ("gate_up_proj",), 8)


def test_a_module_the_model_does_not_have_is_a_spec_error_with_its_line() -> None:
    text = ("model:\n  name: falcon-7b\nworkload:\n  type: finetune\n  method: lora\n"
            "  lora_targets: [query_key_value, gate_proj]\n")
    with pytest.raises(SpecError, match=r"job\.yaml:6 workload\.lora_targets: gate_proj: "
                                        r"not a module of falcon-7b; its linear modules are "
                                        r"query_key_value, dense, dense_h_to_4h, dense_4h_to_h"):
        parse_job_spec(text, "job.yaml", purpose="estimate")
    ok = text.replace(", gate_proj", ", dense_4h_to_h")
    assert parse_job_spec(ok, "job.yaml", purpose="estimate").workload.lora_targets == (
        "query_key_value", "dense_4h_to_h")
