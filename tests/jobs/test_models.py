"""The current models: table values, config.json reading per family, their totals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuopt.jobs.architectures import ARCHITECTURES, find_architecture
from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.estimate.memory.inference import kv_cache_bytes
from gpuopt.jobs.hfconfig import HfConfigError, architecture_from_hf_config, load_hf_config
from gpuopt.jobs.loader import parse_job_spec

CONFIGS = Path(__file__).parent / "hf_configs"

# Parameter totals as published, in billions, and where:
#  MC = the model card on the Hugging Face Hub (its text or table);
#  HUB = the parameter count the Hub shows on the model page (from the safetensors
#        index), used where the card says only a round size ("7B", "12B").
PUBLISHED = {
    "llama-3.2-1b": (1.23, "MC: Llama 3.2 model card, 'Params' column, 1B (1.23B)"),
    "llama-3.2-3b": (3.21, "MC: Llama 3.2 model card, 3B (3.21B)"),
    # Llama-3.3-70B: the Hub API's safetensors total is 70,553,706,496, as recorded in
    # public code read with the search tool on 2026-12-01 (a scraper's fixture
    # {"safetensors": {"total": 70553706496}}; a catalog entry for
    # meta-llama/Llama-3.3-70B-Instruct at revision 6f6073b4, "parameters": 70553706496).
    "llama-3.3-70b": (70.6, "HUB: 70.6B params (card: '70B'); exact: see EXACT"),
    "qwen2.5-14b": (14.7, "MC: Number of Parameters: 14.7B"),
    "qwen2.5-32b": (32.5, "MC: Number of Parameters: 32.5B"),
    "qwen2.5-72b": (72.7, "MC: Number of Parameters: 72.7B"),
    "qwen3-8b": (8.2, "MC: Number of Parameters: 8.2B"),
    "qwen3-30b-a3b": (30.5, "MC: Number of Parameters: 30.5B in total and 3.3B activated"),
    # Gemma 2: keras-team/keras-hub keras_hub/src/models/gemma/gemma_presets.py (commit
    # 02aeee5f, read 2026-12-01): gemma2_9b_en "params": 9241705984, gemma2_27b_en
    # "params": 27227128320.
    "gemma-2-9b": (9.24, "HUB: 9.24B params; Gemma 2 report table 1: 8.32B non-embedding "
                         "+ 0.92B embedding; exact: see EXACT"),
    "gemma-2-27b": (27.2, "HUB: 27.2B params; Gemma 2 report: 26.05B + 1.18B embedding; "
                          "exact: see EXACT"),
    # Mistral-Nemo: 12,247,782,400, as llama.cpp's server reports n_params for its GGUF
    # and as other public code records it for mistralai/Mistral-Nemo-Instruct-2407
    # (read with the search tool on 2026-12-01).
    "mistral-nemo-12b": (12.2, "HUB: 12.2B params (card: '12B'); exact: see EXACT"),
    "phi-3.5-mini": (3.8, "MC: 'Phi-3.5-mini has 3.8B parameters'"),
    "deepseek-v2-lite": (15.7, "MC: 'DeepSeek-V2-Lite has 15.7B parameters'"),
    "mpt-7b": (6.7, "MC: model card hyperparameter table, n_parameters 6.7B"),
    "pythia-6.9b": (6.857302016, "MC: Pythia table, 6,857,302,016 params"),
    # StarCoder2-7B: no exact published total was found to read here (public code gives
    # the rounded 7.2e9); the config.json values (hidden 4608, intermediate 18432, 36
    # heads, 4 KV heads, vocab 49152) match a public copy of that config.
    "starcoder2-7b": (7.17, "HUB: 7.17B params (card: '7B'); public code: 7.2e9"),
}

# Totals published to the parameter (sources in the comments above).
EXACT = {
    "llama-3.3-70b": 70_553_706_496,
    "gemma-2-9b": 9_241_705_984,
    "gemma-2-27b": 27_227_128_320,
    "mistral-nemo-12b": 12_247_782_400,
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_models_with_an_exact_published_total_match_it(name: str) -> None:
    assert ARCHITECTURES[name].params == EXACT[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_new_models_match_their_published_totals_within_one_percent(name: str) -> None:
    expected, _source = PUBLISHED[name]
    assert abs(ARCHITECTURES[name].params / (expected * 1e9) - 1) < 0.01


def test_falcon_40b_counts_its_tied_output_once() -> None:
    # The card says "40B"; the Hub's 41.8B counts the tied lm_head a second time (the
    # safetensors files hold it twice). The distinct parameters are 41.30B. The Hub-style
    # total, 41,835,970,560, is what a public model registry records for tiiuae/falcon-40b
    # ("total_parameters: 41835970560", 60 layers, hidden 8192, 128 heads; read with the
    # search tool on 2026-12-01).
    a = ARCHITECTURES["falcon-40b"]
    assert a.tie_embeddings
    assert a.params + a.vocab_size * a.hidden_size == 41_835_970_560
    assert a.params == 41_303_293_952


def test_pythia_exact_count_from_its_table() -> None:
    # Pythia's README: 6,857,302,016 total, 6,444,163,072 non-embedding.
    a = ARCHITECTURES["pythia-6.9b"]
    assert a.params == 6_857_302_016
    assert a.params - a.embedding_params() - a.head_params() == 6_444_163_072


def test_moe_active_parameters() -> None:
    q = ARCHITECTURES["qwen3-30b-a3b"]
    assert abs(q.active_params / 3.3e9 - 1) < 0.02  # card: 3.3B activated
    d = ARCHITECTURES["deepseek-v2-lite"]
    # The card's 2.4B activated leaves the input embedding out (a lookup, no compute).
    assert abs((d.active_params - d.embedding_params()) / 2.4e9 - 1) < 0.03


def _fixture(hub_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (CONFIGS / f"{hub_id.replace('/', '--')}.json").read_text())
    return data


# Fixtures of table models (the others exercise config reading only).
TABLE_CONFIGS = sorted(p for p in CONFIGS.glob("*.json")
                       if find_architecture(p.stem.replace("--", "/")) is not None)


def test_every_new_model_has_its_config_json() -> None:
    have = {find_architecture(p.stem.replace("--", "/")).name  # type: ignore[union-attr]
            for p in TABLE_CONFIGS}
    assert set(PUBLISHED) | {"falcon-40b"} <= have


@pytest.mark.parametrize("path", TABLE_CONFIGS, ids=lambda p: p.stem)
def test_config_json_reads_to_the_table_entry(path: Path) -> None:
    table = find_architecture(path.stem.replace("--", "/"))
    arch = load_hf_config(path)
    assert table is not None and table.hf_id is not None and find_architecture(table.hf_id) is table
    for field in ("layers", "hidden_size", "heads", "kv_heads", "dim_head", "vocab_size",
                  "num_experts", "experts_per_token", "expert_size", "tie_embeddings",
                  "kv_lora_rank", "qk_rope_head_dim", "gated_mlp", "params", "active_params",
                  "sliding_window", "sliding_layers"):
        assert getattr(arch, field) == getattr(table, field), field


def test_gemma2_head_dim_sandwich_norms_and_tied_default() -> None:
    cfg = _fixture("google/gemma-2-9b")
    assert "tie_word_embeddings" not in cfg  # Gemma2Config ties by default
    a = architecture_from_hf_config(cfg)
    assert a.dim_head == 256 and a.q_dim == 4096 != a.hidden_size
    assert a.tie_embeddings and a.head_params() == 0
    assert a.norms_per_layer == 4
    assert a.linear_shapes()["o_proj"] == (4096, 3584)


def test_qwen3_moe_experts_and_qk_norm() -> None:
    a = architecture_from_hf_config(_fixture("Qwen/Qwen3-30B-A3B"))
    assert (a.num_experts, a.experts_per_token, a.expert_size) == (128, 8, 768)
    assert a.moe_layers == 48 and a.shared_expert_size == 0 and a.qk_norm
    # one layer: attention 2048x4096 (q) + 2 x 2048x512 (k, v) + 4096x2048 (o),
    # 128 experts x 3 x 2048x768, router 2048x128, 2 RMSNorms + q/k norms of 128
    attn = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048
    experts = 128 * 3 * 2048 * 768
    layer = attn + experts + 2048 * 128 + 2 * 2048 + 2 * 128
    assert a.params == 2 * 151936 * 2048 + 48 * layer + 2048


def test_qwen2_moe_shared_expert_and_its_gate() -> None:
    a = architecture_from_hf_config(_fixture("Qwen/Qwen1.5-MoE-A2.7B"))
    assert a.shared_expert_size == 5632 and a.shared_expert_gate
    assert a.attention_bias  # Qwen2-MoE keeps Qwen2's q/k/v biases
    # card: "14.3B parameters in total and 2.7B activated parameters during runtime"
    assert abs(a.params / 14.3e9 - 1) < 0.01
    assert abs(a.active_params / 2.7e9 - 1) < 0.01
    layer_router = 2048 * 60 + 2048  # router + shared_expert_gate
    assert a.router_params() == 24 * layer_router


def test_qwen_moe_dense_layers_by_sparse_step_and_mlp_only_layers() -> None:
    cfg = {**_fixture("Qwen/Qwen1.5-MoE-A2.7B"), "decoder_sparse_step": 2,
           "mlp_only_layers": [1]}
    a = architecture_from_hf_config(cfg)
    # sparse when (i + 1) % 2 == 0 and i not in [1]: i = 3, 5, ..., 23 -> 11 layers
    assert a.moe_layers == 11 and a.dense_layers == 13


def test_deepseek_mla_shapes_and_kv_cache_is_the_latent() -> None:
    a = architecture_from_hf_config(_fixture("deepseek-ai/DeepSeek-V2-Lite"))
    assert a.is_mla and a.q_lora_rank == 0  # q_lora_rank null: a full q_proj
    assert a.attention_shapes() == {
        "q_proj": (2048, 16 * 192),
        "kv_a_proj_with_mqa": (2048, 512 + 64),
        "kv_b_proj": (512, 16 * (128 + 128)),
        "o_proj": (16 * 128, 2048),
    }
    assert (a.dense_layers, a.moe_layers, a.shared_expert_size) == (1, 26, 2816)
    # per token and layer: the 512 latent + the 64-wide rope key, not 2 x 16 x 192
    assert a.kv_cache_width() == 576 and a.kv_cache_width(tp=4) == 576
    assert kv_cache_bytes(a, 1000, 3, 2) == 27 * 576 * 2 * 1000 * 3


def test_deepseek_v3_style_q_lora_and_moe_layer_freq() -> None:
    cfg = {**_fixture("deepseek-ai/DeepSeek-V2-Lite"), "model_type": "deepseek_v3",
           "q_lora_rank": 1536, "moe_layer_freq": 2, "first_k_dense_replace": 3}
    a = architecture_from_hf_config(cfg)
    assert a.attention_shapes()["q_a_proj"] == (2048, 1536)
    assert a.attention_shapes()["q_b_proj"] == (1536, 16 * 192)
    assert a.moe_layers == len([i for i in range(27) if i >= 3 and i % 2 == 0])


def test_mpt_names_and_no_bias() -> None:
    a = architecture_from_hf_config(_fixture("mosaicml/mpt-7b"))
    assert (a.hidden_size, a.layers, a.heads, a.intermediate_size) == (4096, 32, 32, 16384)
    assert not (a.attention_bias or a.mlp_bias or a.norm_bias)
    assert a.learned_positions == 0 and a.tie_embeddings  # ALiBi; wte reused for output
    with_bias = architecture_from_hf_config({**_fixture("mosaicml/mpt-7b"), "no_bias": False})
    assert with_bias.params > a.params
    gqa = architecture_from_hf_config({**_fixture("mosaicml/mpt-7b"), "attn_config": {
        "attn_type": "grouped_query_attention", "kv_n_heads": 8, "alibi": True}})
    assert gqa.kv_heads == 8


def test_gpt_neox_parallel_residual_keeps_two_layernorms() -> None:
    cfg = _fixture("EleutherAI/pythia-6.9b")
    parallel = architecture_from_hf_config(cfg)
    serial = architecture_from_hf_config({**cfg, "use_parallel_residual": False})
    assert parallel.norms_per_layer == serial.norms_per_layer == 2
    assert parallel.params == serial.params
    assert not parallel.tie_embeddings and parallel.attention_bias and parallel.mlp_bias


def test_starcoder2_gqa_and_gpt_bigcode_mqa() -> None:
    s2 = architecture_from_hf_config(_fixture("bigcode/starcoder2-7b"))
    assert s2.kv_heads == 4 and s2.kv_dim == 512 and s2.tie_embeddings and not s2.gated_mlp
    assert s2.kv_cache_width() == 2 * 4 * 128
    sc = architecture_from_hf_config(_fixture("bigcode/starcoderbase-1b"))
    assert sc.kv_heads == 1 and sc.kv_dim == 128 and sc.learned_positions == 8192
    assert sc.kv_cache_width(tp=4) == 2 * 128  # the one K/V head is replicated
    assert architecture_from_hf_config({**_fixture("bigcode/starcoderbase-1b"),
                                        "multi_query": False}).kv_heads == 16


def test_falcon_40b_old_refinedweb_config_is_the_new_architecture() -> None:
    new = architecture_from_hf_config(_fixture("tiiuae/falcon-40b"))
    old = architecture_from_hf_config({
        "alibi": False, "architectures": ["RWForCausalLM"], "bias": False,
        "hidden_size": 8192, "model_type": "RefinedWeb", "n_head": 128, "n_head_kv": 8,
        "n_layer": 60, "parallel_attn": True, "vocab_size": 65024})
    assert old.kv_heads == new.kv_heads == 8 and old.params == new.params


def test_unknown_model_type_is_refused_by_name() -> None:
    with pytest.raises(HfConfigError, match=r"model_type 'mamba' is not one gpuopt reads"):
        architecture_from_hf_config({"model_type": "mamba", "hidden_size": 768})


def test_unknown_model_type_in_a_job_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "rwkv",
                                                     "hidden_size": 2048}))
    job = "name: x\nmodel:\n  config: config.json\nworkload:\n  type: finetune\n"
    with pytest.raises(SpecError) as err:
        parse_job_spec(job, str(tmp_path / "job.yaml"))
    text = str(err.value)
    assert "job.yaml:3" in text and "'rwkv'" in text and "params:" in text


def test_instruct_ids_resolve_to_the_base_architecture() -> None:
    assert find_architecture("Qwen/Qwen2.5-32B-Instruct") is ARCHITECTURES["qwen2.5-32b"]
    assert find_architecture("meta-llama/Llama-3.2-3B-Instruct") is ARCHITECTURES[
        "llama-3.2-3b"]
    assert find_architecture("mistralai/Mistral-Nemo-Instruct-2407") is ARCHITECTURES[
        "mistral-nemo-12b"]
    assert find_architecture("deepseek-ai/DeepSeek-V2-Lite-Chat") is ARCHITECTURES[
        "deepseek-v2-lite"]


def test_lora_on_moe_mlps_counts_routed_shared_and_dense_layers() -> None:
    from gpuopt.jobs.estimate.memory.training import lora_params

    d = ARCHITECTURES["deepseek-v2-lite"]
    r = 8
    # up_proj: 26 MoE layers x (64 experts x r(2048 + 1408) + shared r(2048 + 2816))
    # + 1 dense layer x r(2048 + 10944)
    expected = 26 * (64 * r * (2048 + 1408) + r * (2048 + 2816)) + 1 * r * (2048 + 10944)
    assert lora_params(d, ("up_proj",), r) == expected
    # Mixtral (no shared expert, no dense layer): 32 layers x 8 experts x r(4096 + 14336)
    mix = ARCHITECTURES["mixtral-8x7b"]
    assert lora_params(mix, ("down_proj",), r) == 32 * 8 * r * (4096 + 14336)
    # attention: once per layer on its shape (q_proj 2048 x 3072)
    assert lora_params(d, ("q_proj",), r) == 27 * r * (2048 + 16 * 192)


def test_every_table_entry_is_found_by_its_hub_id() -> None:
    for a in ARCHITECTURES.values():
        assert a.hf_id is not None and find_architecture(a.hf_id) is a, a.name


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.json")), ids=lambda p: p.stem)
def test_every_field_of_every_family_takes_every_hostile_value(path: Path) -> None:
    """A config.json is a file from anywhere: any value in any key is an architecture
    with finite, positive counts or an HfConfigError, never another exception."""
    from tests.mutate import HOSTILE_VALUES

    cfg = json.loads(path.read_text())
    nested = {k: v for k, v in cfg.items() if isinstance(v, dict)}
    slots = [(k, None) for k in cfg] + [(k, sub) for k, v in nested.items() for sub in v]
    for key, sub in slots:
        for bad in HOSTILE_VALUES:
            doc = json.loads(json.dumps(cfg))
            if sub is None:
                doc[key] = bad
            else:
                doc[key][sub] = bad
            try:
                a = architecture_from_hf_config(doc)
            except HfConfigError:
                continue
            assert 0 < a.params < 10**22 and 0 < a.active_params <= a.params, (key, sub, bad)
            assert a.kv_cache_width() > 0 and a.linear_params() > 0, (key, sub, bad)


@pytest.mark.parametrize(("model", "names"), [
    # the module names of each family's transformers / remote-code implementation
    ("mpt-7b", ["Wqkv", "out_proj", "up_proj", "down_proj"]),
    ("pythia-6.9b", ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]),
    ("starcoder2-7b", ["q_proj", "k_proj", "v_proj", "o_proj", "c_fc", "c_proj"]),
    ("deepseek-v2-lite", ["q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "up_proj",
                          "down_proj", "gate_proj"]),
    ("gemma-2-9b", ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                    "down_proj"]),
    ("falcon-40b", ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"]),
])
def test_lora_targets_by_each_familys_own_module_names(model: str, names: list[str]) -> None:
    from gpuopt.jobs.modules import block_modules, module_names

    arch = ARCHITECTURES[model]
    assert module_names(arch) == names
    per_layer = {m.name: m.shape for m in block_modules(arch)}
    if not arch.is_moe:  # the (fused) modules cover the blocks' linear weights exactly
        assert sum(a * b for a, b in per_layer.values()) * arch.layers == arch.linear_params()
    job = (f"model: {{name: {model}}}\nworkload:\n  type: finetune\n  method: lora\n"
           f"  lora_targets: [{names[0]}]\n")
    assert parse_job_spec(job, "job.yaml").workload.lora_targets == (names[0],)


def test_the_largest_matrix_of_an_moe_model_may_be_its_dense_mlp() -> None:
    from gpuopt.jobs.estimate.memory.weights import largest_matrix

    # DeepSeek-V2-Lite: layer 0's dense MLP (2048 x 10944) beats q_proj (2048 x 3072) and
    # the experts (2048 x 1408)
    assert largest_matrix(ARCHITECTURES["deepseek-v2-lite"]) == 2048 * 10944
    assert largest_matrix(ARCHITECTURES["mixtral-8x7b"]) == 4096 * 14336
