"""Sliding-window attention: windowed layers keep at most ``sliding_window`` tokens of KV.

Figures are hand-computed from each model's config.json (tests/jobs/hf_configs).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES, Architecture
from gpuopt.jobs.estimate.fit import check_fit
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.constants import ALLOCATOR_OVERHEAD
from gpuopt.jobs.estimate.memory.inference import (
    kv_cache_bytes,
    mean_kv_layer_tokens,
    sliding_prefill_bytes,
)
from gpuopt.jobs.estimate.runtime import estimate_runtime
from gpuopt.jobs.hfconfig import HfConfigError, architecture_from_hf_config, load_hf_config
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS

CONFIGS = Path(__file__).parents[1] / "hf_configs"
GEMMA2 = ARCHITECTURES["gemma-2-9b"]
MISTRAL = ARCHITECTURES["mistral-7b"]


def _cfg(hub_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (CONFIGS / f"{hub_id.replace('/', '--')}.json").read_text())
    return data


def _full(arch: Architecture) -> Architecture:
    return dataclasses.replace(arch, sliding_window=0, sliding_layers=())


def _infer(prompt: int, output: int, **kw: Any) -> WorkloadSpec:
    kw.setdefault("concurrency", 1)  # one sequence unless the test says otherwise
    return WorkloadSpec(type="inference", prompt_tokens=prompt, output_tokens=output, **kw)


def test_gemma2_config_windows_the_even_layers() -> None:
    a = load_hf_config(CONFIGS / "google--gemma-2-9b.json")
    assert a.sliding_window == 4096
    assert a.sliding_layers == tuple(range(0, 42, 2)) and a.windowed_layers == 21
    assert (a.sliding_window, a.sliding_layers) == (GEMMA2.sliding_window, GEMMA2.sliding_layers)


def test_gemma2_9b_kv_cache_at_8k() -> None:
    # 2 (K, V) x 8 KV heads x 256 x 2 bytes = 8,192 B per token and layer; 8,192-token
    # context: 21 global layers keep 8,192 tokens, 21 local layers 4,096.
    per_seq = 21 * 8192 * 8192 + 21 * 8192 * 4096
    full = 42 * 8192 * 8192
    assert kv_cache_bytes(GEMMA2, 8192, 1, 2) == per_seq == 2_113_929_216
    assert kv_cache_bytes(_full(GEMMA2), 8192, 1, 2) == full == 2_818_572_288
    # Half the layers at half the context: 3/4 of the full-attention figure (it tends to
    # 1/2 only as the context grows far past the window, beyond Gemma-2's 8,192).
    assert per_seq / full == 0.75
    est = estimate_memory(GEMMA2, _infer(7168, 1024, concurrency=8))
    assert est.per_sequence_bytes == round(per_seq * (1 + ALLOCATOR_OVERHEAD))
    # plus one step's worth (2,048 tokens) on the local layers while a prompt prefills
    slack = 21 * 8192 * 2048
    assert sliding_prefill_bytes(GEMMA2, 8192, 2048, 2) == slack
    assert est.components["kv_cache"] == 8 * per_seq + slack
    before = estimate_memory(_full(GEMMA2), _infer(7168, 1024, concurrency=8))
    assert before.components["kv_cache"] == 8 * full


def test_mistral_v01_caps_its_kv_at_4096_tokens() -> None:
    a = load_hf_config(CONFIGS / "mistralai--Mistral-7B-v0.1.json")
    assert a.sliding_window == 4096 and a.windowed_layers == 32
    assert (a.sliding_window, a.sliding_layers) == (MISTRAL.sliding_window,
                                                   MISTRAL.sliding_layers)
    # 32 layers x 2 x 8 x 128 x 2 B = 131,072 B per token, at most 4,096 tokens
    assert kv_cache_bytes(MISTRAL, 32768, 1, 2) == 32 * 4096 * 4096 == 2**29
    assert kv_cache_bytes(_full(MISTRAL), 32768, 1, 2) == 32 * 4096 * 32768 == 2**32
    assert kv_cache_bytes(MISTRAL, 32768, 1, 2) == kv_cache_bytes(MISTRAL, 4096, 1, 2)
    assert kv_cache_bytes(MISTRAL, 2000, 1, 2) == kv_cache_bytes(_full(MISTRAL), 2000, 1, 2)
    job = _infer(30720, 2048, concurrency=16)
    est = estimate_memory(MISTRAL, job)
    assert est.components["kv_cache"] == 16 * 2**29 + 32 * 4096 * 2048
    # more sequences fit on one A100-80GB: all 16 instead of 13
    gpu = GPUS["A100-80GB"]
    assert check_fit(gpu, 1, est).concurrency == 16
    assert check_fit(gpu, 1, estimate_memory(_full(MISTRAL), job)).concurrency == 13


@pytest.mark.parametrize("hub_id", ["mistralai/Mixtral-8x7B-v0.1",
                                    "mistralai/Mistral-Nemo-Base-2407", "Qwen/Qwen2.5-14B",
                                    "Qwen/Qwen3-8B", "meta-llama/Llama-3.2-1B"])
def test_configs_without_a_window_are_unchanged(hub_id: str) -> None:
    # null sliding_window, or use_sliding_window: false (Qwen), or no key (Llama)
    a = load_hf_config(CONFIGS / f"{hub_id.replace('/', '--')}.json")
    assert a.windowed_layers == 0
    assert kv_cache_bytes(a, 32768, 3, 2) == a.layers * a.kv_cache_width() * 2 * 32768 * 3
    assert sliding_prefill_bytes(a, 32768, 2048, 2) == 0
    assert mean_kv_layer_tokens(a, 1000, 500) == a.layers * 1250


def test_llama_estimate_is_unchanged() -> None:
    a = ARCHITECTURES["llama-3-8b"]
    assert a.windowed_layers == 0
    est = estimate_memory(a, _infer(7168, 1024))
    assert est.components["kv_cache"] == 32 * 2 * 8 * 128 * 2 * 8192 == 2**30


def test_qwen_with_use_sliding_window_windows_from_max_window_layers() -> None:
    cfg = {**_cfg("Qwen/Qwen2.5-14B"), "use_sliding_window": True, "max_window_layers": 40,
           "sliding_window": 4096}
    a = architecture_from_hf_config(cfg)
    assert a.sliding_layers == tuple(range(40, 48)) and a.sliding_window == 4096


GEMMA3_1B = {"model_type": "gemma3_text", "hidden_size": 1152, "num_hidden_layers": 26,
             "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
             "intermediate_size": 6912, "vocab_size": 262144, "sliding_window": 512,
             "sliding_window_pattern": 6}


def test_gemma3_five_local_one_global() -> None:
    a = architecture_from_hf_config(GEMMA3_1B)
    assert a.sliding_window == 512
    assert set(range(26)) - set(a.sliding_layers) == {5, 11, 17, 23}
    listed = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(26)]
    assert architecture_from_hf_config({**GEMMA3_1B, "layer_types": listed}) == a
    # layer_types wins over the pattern when the config lists them
    flipped = architecture_from_hf_config({**GEMMA3_1B, "layer_types": ["full_attention"] * 26})
    assert flipped.windowed_layers == 0
    with pytest.raises(HfConfigError, match="layer_types must list 26"):
        architecture_from_hf_config({**GEMMA3_1B, "layer_types": ["full_attention"]})


# microsoft/Phi-3-mini-4k-instruct config.json (transformers_version 4.40.2), its keys
# that the reader uses: "sliding_window": 2047 in a 4,096-token context.
PHI3_MINI_4K = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
                "max_position_embeddings": 4096, "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32, "sliding_window": 2047,
                "tie_word_embeddings": False, "vocab_size": 32064}


def test_phi3_mini_4k_windows_every_layer_at_2047() -> None:
    a = architecture_from_hf_config(PHI3_MINI_4K)
    table = ARCHITECTURES["phi-3-mini"]
    assert a.sliding_window == 2047 and a.sliding_layers == tuple(range(32))
    assert (a.sliding_window, a.sliding_layers, a.params) == (
        table.sliding_window, table.sliding_layers, table.params)
    # 32 x 2 x 32 x 96 x 2 B = 393,216 B a token: 2,047 of the 4,096 kept
    assert kv_cache_bytes(a, 4096, 1, 2) == 393_216 * 2047


@pytest.mark.parametrize("value", [None, 0])
def test_null_or_zero_window_is_none(value: object) -> None:
    a = architecture_from_hf_config({**PHI3_MINI_4K, "sliding_window": value})
    assert a.windowed_layers == 0 and a.sliding_layers == ()


def test_a_window_that_is_not_a_count_is_refused() -> None:
    with pytest.raises(HfConfigError, match="sliding_window"):
        architecture_from_hf_config({**PHI3_MINI_4K, "sliding_window": "4k"})
    with pytest.raises(ValueError, match="sliding_layers"):
        dataclasses.replace(MISTRAL, sliding_layers=(32,))


def test_windows_leave_parameter_totals_alone() -> None:
    for name in ("gemma-2-9b", "gemma-2-27b", "mistral-7b", "phi-3-mini", "starcoder2-7b"):
        a = ARCHITECTURES[name]
        assert a.windowed_layers > 0
        assert a.params == _full(a).params and a.active_params == _full(a).active_params


def test_decode_reads_at_most_the_window() -> None:
    # Mistral-7B, context 2,048 -> 6,144: the windowed mean grows to 4,096 for half the
    # steps (mean 3,072) and stays there for the other half: 3,584 tokens a layer.
    assert mean_kv_layer_tokens(MISTRAL, 2048, 4096) == 32 * 3584
    assert mean_kv_layer_tokens(MISTRAL, 30720, 2048) == 32 * 4096
    assert mean_kv_layer_tokens(MISTRAL, 1000, 1000) == 32 * 1500
    job = _infer(30720, 2048, concurrency=16, requests=256)
    gpu = GPUS["A100-80GB"]
    windowed = estimate_runtime(MISTRAL, job, gpu, 1)
    full = estimate_runtime(_full(MISTRAL), job, gpu, 1)
    assert windowed.batch == 16 and full.batch == 13
    assert windowed.tokens_per_second > 2 * full.tokens_per_second


def test_stored_architecture_keeps_its_window() -> None:
    from gpuopt.jobs.resolved import architecture_json

    doc = json.loads(json.dumps(architecture_json(GEMMA2)))
    assert Architecture(**doc) == GEMMA2
