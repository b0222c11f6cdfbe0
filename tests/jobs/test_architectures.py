from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES, architecture_from_params, find_architecture
from gpuopt.jobs.hfconfig import HfConfigError, architecture_from_hf_config, load_hf_config

# Totals published on the model cards / papers (billions), rounded as published.
PUBLISHED = {
    "llama-2-7b": (6.74, 0.01),
    "llama-2-13b": (13.02, 0.01),
    "llama-2-70b": (68.98, 0.01),
    "llama-3-8b": (8.03, 0.01),
    "llama-3-70b": (70.55, 0.01),
    "llama-3.1-8b": (8.03, 0.01),
    "llama-3.1-70b": (70.55, 0.01),
    "mistral-7b": (7.24, 0.01),
    "mixtral-8x7b": (46.70, 0.01),
    "qwen2.5-7b": (7.61, 0.01),
    "phi-3-mini": (3.82, 0.01),
    "falcon-7b": (6.92, 0.01),
    "gpt2": (0.124, 0.001),
    "gpt2-medium": (0.355, 0.001),  # the model cards: 355M, 774M, 1.5B
    "gpt2-large": (0.774, 0.001),
    "gpt2-xl": (1.5, 0.06),
    "opt-1.3b": (1.316, 0.001),
}


def test_table_has_every_required_model() -> None:
    assert set(PUBLISHED) <= set(ARCHITECTURES)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_param_count_matches_published(name: str) -> None:
    expected, tol = PUBLISHED[name]
    assert abs(ARCHITECTURES[name].params / 1e9 - expected) <= tol


def test_mixtral_active_params() -> None:
    mix = ARCHITECTURES["mixtral-8x7b"]
    assert mix.num_experts == 8 and mix.experts_per_token == 2
    assert abs(mix.active_params / 1e9 - 12.9) < 0.05


def test_attention_shapes() -> None:
    assert ARCHITECTURES["falcon-7b"].kv_heads == 1
    assert ARCHITECTURES["falcon-7b"].kv_dim == 64
    assert ARCHITECTURES["llama-3-8b"].kv_dim == 1024  # GQA: 8 kv heads x 128
    assert ARCHITECTURES["llama-2-7b"].kv_dim == 4096


def test_gpt2_exact_count() -> None:
    assert ARCHITECTURES["gpt2"].params == 124_439_808


def test_lookup_by_hf_id_and_case() -> None:
    assert find_architecture("meta-llama/Llama-2-7b-hf") is ARCHITECTURES["llama-2-7b"]
    assert find_architecture("MISTRAL-7B") is ARCHITECTURES["mistral-7b"]
    assert find_architecture("no-such-model") is None


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_hf_config_round_trip(name: str) -> None:
    a = ARCHITECTURES[name]
    if a.name.startswith("gpt2"):
        cfg = {"model_type": "gpt2", "n_embd": a.hidden_size, "n_layer": a.layers,
               "n_head": a.heads, "vocab_size": a.vocab_size, "n_positions": 1024}
    elif a.name.startswith("opt"):
        cfg = {"model_type": "opt", "hidden_size": a.hidden_size, "num_hidden_layers": a.layers,
               "num_attention_heads": a.heads, "ffn_dim": a.intermediate_size,
               "vocab_size": a.vocab_size, "max_position_embeddings": 2048}
    elif a.name.startswith("falcon"):
        cfg = {"model_type": "falcon", "hidden_size": a.hidden_size,
               "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
               "multi_query": True, "parallel_attn": True, "bias": False,
               "vocab_size": a.vocab_size}
    else:
        cfg = {"model_type": "qwen2" if "qwen" in name else "llama",
               "hidden_size": a.hidden_size, "num_hidden_layers": a.layers,
               "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
               "intermediate_size": a.intermediate_size, "vocab_size": a.vocab_size,
               "tie_word_embeddings": a.tie_embeddings}
        if a.is_moe:
            cfg.update(num_local_experts=a.num_experts, num_experts_per_tok=a.experts_per_token)
    assert architecture_from_hf_config(cfg).params == a.params


def test_load_hf_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(HfConfigError, match="not valid JSON"):
        load_hf_config(bad)
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    with pytest.raises(HfConfigError, match="no positive integer"):
        load_hf_config(bad)
    with pytest.raises(HfConfigError, match="does not exist"):
        load_hf_config(tmp_path / "missing.json")


def test_explicit_params_keep_count_and_get_plausible_shape() -> None:
    a = architecture_from_params(7_000_000_000)
    assert a.params == 7_000_000_000
    assert 3500 <= a.hidden_size <= 5000 and 25 <= a.layers <= 40
    assert abs(a.computed_params() / 7e9 - 1) < 0.25
