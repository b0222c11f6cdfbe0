"""Read a Hugging Face ``config.json`` into an :class:`Architecture`.

Key names per family, as the transformers configuration classes (and, for MPT, the
model's own configuration_mpt.py) define them; a key a config leaves out takes that
class's default:

- llama, mistral, mixtral, qwen2, qwen3, phi3: ``hidden_size``, ``num_hidden_layers``,
  ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``intermediate_size``;
  Mixtral's experts ``num_local_experts`` / ``num_experts_per_tok`` (expert width
  ``intermediate_size``).
- qwen2_moe, qwen3_moe: ``num_experts``, ``num_experts_per_tok``,
  ``moe_intermediate_size``, ``shared_expert_intermediate_size`` (qwen2_moe, with a
  sigmoid ``shared_expert_gate``), ``decoder_sparse_step`` / ``mlp_only_layers`` (dense
  layers of ``intermediate_size``).
- deepseek_v2, deepseek_v3: MLA ``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``,
  ``qk_rope_head_dim``, ``v_head_dim``; experts ``n_routed_experts``,
  ``n_shared_experts``, ``moe_intermediate_size``, ``first_k_dense_replace``,
  ``moe_layer_freq``.
- gemma, gemma2, gemma3_text: ``head_dim`` independent of hidden/heads, GeGLU MLP,
  embeddings tied by default; Gemma-2/3 have four norms a block, Gemma-3 q/k norms.
- sliding-window attention (``sliding_window``; see _sliding): every layer for mistral,
  mixtral, phi3, starcoder2; ``layer_types`` where given, else Gemma-2's alternation and
  Gemma-3's ``sliding_window_pattern``; Qwen only with ``use_sliding_window`` (layers from
  ``max_window_layers`` on).
- gpt_neox: ``use_parallel_residual`` (attention and MLP side by side; two LayerNorms
  either way), biases on every linear (``attention_bias``), untied ``embed_out``.
- mpt: ``d_model``, ``n_layers``, ``n_heads``, ``expansion_ratio``, ``max_seq_len``,
  ``no_bias``, ``attn_config`` (``alibi``, ``attn_type``, ``kv_n_heads``), always tied.
- starcoder2: GQA, ``use_bias``, GELU MLP, LayerNorm, tied by default.
- gpt_bigcode (StarCoder 1, SantaCoder): GPT-2 names, ``multi_query`` (one K/V head).
- falcon / RefinedWeb / RefinedWebModel: ``multi_query``, ``n_head_kv`` / ``num_kv_heads``,
  ``new_decoder_architecture`` (RefinedWeb, the 40B/180B layout, implies it).
- gpt2 (``n_embd``, ``n_layer``, ``n_head``, ``n_inner``, ``n_positions``), opt
  (``ffn_dim``).

Any other ``model_type`` is refused by name: guessing its shapes would misprice it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuopt.core.errors import GpuoptError
from gpuopt.jobs.architectures import Architecture, every_layer, local_global
from gpuopt.jobs.bounded_read import UnreadableFile, read_bounded

# A Hugging Face config.json is a few KiB; a file beyond this is not one.
MAX_CONFIG_BYTES = 1 << 20
# No dimension of a real model comes near this; it keeps the estimates' arithmetic finite.
MAX_DIMENSION = 10**9


class HfConfigError(GpuoptError, ValueError):
    """The config.json cannot be turned into an architecture; the message says why."""


def _int(cfg: dict[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            if value > MAX_DIMENSION:
                raise HfConfigError(f"config.json {key} is larger than {MAX_DIMENSION:,}")
            return value
    if default is not None:
        return default
    raise HfConfigError(f"config.json has no positive integer {' / '.join(keys)}")


def _opt_int(cfg: dict[str, Any], key: str) -> int:
    """An optional dimension: 0 when absent or null (e.g. DeepSeek-V2-Lite's q_lora_rank)."""
    return _int(cfg, key, default=0) if cfg.get(key) is not None else 0


def _bool(cfg: dict[str, Any], key: str, default: bool) -> bool:
    value = cfg.get(key, default)
    return value if isinstance(value, bool) else default


def _head_dim(cfg: dict[str, Any]) -> int | None:
    value = cfg.get("head_dim")
    return _int(cfg, "head_dim") if isinstance(value, int) and value > 0 else None


def _gpt2(cfg: dict[str, Any], name: str) -> Architecture:
    h = _int(cfg, "n_embd", "hidden_size")
    heads = _int(cfg, "n_head", "num_attention_heads")
    n_pos = _int(cfg, "n_positions", "max_position_embeddings", default=1024)
    return Architecture(
        name=name, layers=_int(cfg, "n_layer", "num_hidden_layers"), hidden_size=h,
        heads=heads, kv_heads=heads, intermediate_size=_int(cfg, "n_inner", default=4 * h),
        vocab_size=_int(cfg, "vocab_size"), max_position_embeddings=n_pos,
        gated_mlp=False, tie_embeddings=_bool(cfg, "tie_word_embeddings", True),
        attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=n_pos,
        family="gpt2",
    )


def _gpt_bigcode(cfg: dict[str, Any], name: str) -> Architecture:
    """StarCoder 1 / SantaCoder: GPT-2 with multi-query attention (GPTBigCodeConfig:
    multi_query defaults to True, one shared K/V head in c_attn)."""
    base = _gpt2(cfg, name)
    kv = 1 if _bool(cfg, "multi_query", True) else base.heads
    return dataclasses.replace(base, kv_heads=kv)


def _opt(cfg: dict[str, Any], name: str) -> Architecture:
    h = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    n_pos = _int(cfg, "max_position_embeddings", default=2048)
    bias = _bool(cfg, "enable_bias", True)
    return Architecture(
        name=name, layers=_int(cfg, "num_hidden_layers"), hidden_size=h, heads=heads,
        kv_heads=heads, intermediate_size=_int(cfg, "ffn_dim", default=4 * h),
        vocab_size=_int(cfg, "vocab_size"), max_position_embeddings=n_pos,
        gated_mlp=False, tie_embeddings=_bool(cfg, "tie_word_embeddings", True),
        attention_bias=bias, mlp_bias=bias, norm_bias=True,
        learned_positions=n_pos + 2,  # OPTLearnedPositionalEmbedding offset of 2
        family="opt",
    )


def _falcon(cfg: dict[str, Any], name: str, model_type: str) -> Architecture:
    h = _int(cfg, "hidden_size", "n_embd")
    heads = _int(cfg, "num_attention_heads", "n_head")
    # transformers' FalconConfig: the remote-code "RefinedWeb" configs (Falcon-40B/180B)
    # are the new decoder architecture; "RefinedWebModel" (Falcon-7B) is not.
    new_arch = _bool(cfg, "new_decoder_architecture", model_type == "refinedweb")
    if new_arch:
        kv = _int(cfg, "num_kv_heads", "n_head_kv", default=heads)
    elif _bool(cfg, "multi_query", True):
        kv = 1
    else:
        kv = heads
    bias = _bool(cfg, "bias", False)
    return Architecture(
        name=name, layers=_int(cfg, "num_hidden_layers", "n_layer"), hidden_size=h,
        heads=heads, kv_heads=kv,
        intermediate_size=_int(cfg, "ffn_hidden_size", default=4 * h),
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", default=2048),
        gated_mlp=False, tie_embeddings=_bool(cfg, "tie_word_embeddings", True),
        attention_bias=bias, mlp_bias=bias, norm_bias=True,
        # new architecture: ln_attn + ln_mlp; old parallel block: one input_layernorm
        norms_per_layer=2 if new_arch or not _bool(cfg, "parallel_attn", True) else 1,
        family="falcon",
    )


def _gpt_neox(cfg: dict[str, Any], name: str) -> Architecture:
    """GPT-NeoX / Pythia: use_parallel_residual computes attention and MLP side by side,
    but each has its own LayerNorm (input_layernorm, post_attention_layernorm) either
    way, so the parameters are the same; biases everywhere (attention_bias default True,
    the MLP's always); embed_out untied (tie_word_embeddings default False)."""
    h = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    return Architecture(
        name=name, layers=_int(cfg, "num_hidden_layers"), hidden_size=h, heads=heads,
        kv_heads=heads, intermediate_size=_int(cfg, "intermediate_size", default=4 * h),
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", default=2048),
        gated_mlp=False, tie_embeddings=_bool(cfg, "tie_word_embeddings", False),
        attention_bias=_bool(cfg, "attention_bias", True), mlp_bias=True, norm_bias=True,
        family="neox",
    )


def _mpt(cfg: dict[str, Any], name: str) -> Architecture:
    """MPT (configuration_mpt.py): d_model, n_layers, n_heads, expansion_ratio; no_bias
    removes every bias, LayerNorms' too (MPTModel.__init__); ALiBi models have no
    position table; the output reuses wte (always tied)."""
    h = _int(cfg, "d_model")
    heads = _int(cfg, "n_heads")
    attn = cfg.get("attn_config")
    attn = attn if isinstance(attn, dict) else {}
    kind = attn.get("attn_type", "multihead_attention")
    if kind == "multiquery_attention":
        kv = 1
    elif kind == "grouped_query_attention":
        kv = _int(attn, "kv_n_heads", default=heads)
    else:
        kv = heads
    ratio = cfg.get("expansion_ratio", 4)
    if (isinstance(ratio, bool) or not isinstance(ratio, int | float)
            or not 0 < ratio * h <= MAX_DIMENSION):  # also refuses nan and inf
        raise HfConfigError("config.json expansion_ratio must be a positive number (the "
                            f"MLP width d_model x expansion_ratio at most {MAX_DIMENSION:,})")
    ffn = cfg.get("ffn_config")
    ffn = ffn if isinstance(ffn, dict) else {}
    inter = _int(ffn, "ffn_hidden_size", default=max(1, int(ratio * h)))
    gated = ffn.get("ffn_type") in ("mptglu",)
    no_bias = _bool(cfg, "no_bias", True)
    n_pos = _int(cfg, "max_seq_len", default=2048)
    alibi = _bool(attn, "alibi", False)
    learned = n_pos if _bool(cfg, "learned_pos_emb", True) and not alibi else 0
    return Architecture(
        name=name, layers=_int(cfg, "n_layers"), hidden_size=h, heads=heads, kv_heads=kv,
        intermediate_size=inter, vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=n_pos, gated_mlp=gated, tie_embeddings=True,
        attention_bias=not no_bias, mlp_bias=not no_bias, norm_bias=not no_bias,
        learned_positions=learned, family="mpt",
    )


def _starcoder2(cfg: dict[str, Any], name: str) -> Architecture:
    h = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    bias = _bool(cfg, "use_bias", True)
    layers = _int(cfg, "num_hidden_layers")
    return Architecture(
        name=name, layers=layers, hidden_size=h, heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        intermediate_size=_int(cfg, "intermediate_size", default=4 * h),
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", default=4096),
        gated_mlp=False, tie_embeddings=_bool(cfg, "tie_word_embeddings", True),
        attention_bias=bias, mlp_bias=bias, norm_bias=True, family="starcoder2",
        **_sliding(cfg, "starcoder2", layers),
    )


def _deepseek(cfg: dict[str, Any], name: str) -> Architecture:
    """DeepSeek-V2/V3 (DeepseekV2Config / DeepseekV3Config): MLA attention; MoE layers
    from first_k_dense_replace on, every moe_layer_freq-th; n_shared_experts experts of
    moe_intermediate_size always active."""
    h = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    layers = _int(cfg, "num_hidden_layers")
    rope = _int(cfg, "qk_rope_head_dim", default=64)
    nope = _int(cfg, "qk_nope_head_dim", default=128)
    experts = _int(cfg, "n_routed_experts", default=1) if cfg.get("n_routed_experts") else 1
    expert_w = _int(cfg, "moe_intermediate_size", default=1407)
    first_dense = _int(cfg, "first_k_dense_replace", default=0) \
        if cfg.get("first_k_dense_replace") else 0
    freq = _int(cfg, "moe_layer_freq", default=1)
    moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)
    return Architecture(
        name=name, layers=layers, hidden_size=h, heads=heads, kv_heads=heads,
        head_dim=nope + rope, intermediate_size=_int(cfg, "intermediate_size"),
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", default=4096),
        kv_lora_rank=_int(cfg, "kv_lora_rank", default=512), q_lora_rank=_opt_int(cfg,
                                                                                "q_lora_rank"),
        qk_rope_head_dim=rope, v_head_dim=_int(cfg, "v_head_dim", default=128),
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", default=1) if experts > 1 else 1,
        moe_intermediate_size=expert_w,
        shared_expert_size=_opt_int(cfg, "n_shared_experts") * expert_w if experts > 1 else 0,
        dense_layers=layers - moe_layers if experts > 1 else 0,
        tie_embeddings=_bool(cfg, "tie_word_embeddings", False),
        attention_bias=_bool(cfg, "attention_bias", False), family="deepseek",
    )


# Config classes whose default window applies when config.json leaves the key out
# (MistralConfig, Gemma2Config, Gemma3TextConfig: 4096; the others: None).
_DEFAULT_WINDOW = {"mistral": 4096, "gemma2": 4096, "gemma3_text": 4096}
_EVERY_LAYER = frozenset({"mistral", "mixtral", "phi3", "starcoder2"})
_QWEN = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})


def _sliding(cfg: dict[str, Any], model_type: str, layers: int) -> dict[str, Any]:
    """sliding_window / sliding_layers as transformers' configuration classes derive them.

    - mistral, mixtral, phi3, starcoder2: ``sliding_window`` on every layer (their
      attention passes config.sliding_window; MistralConfig ignores ``layer_types``).
    - qwen2/qwen3 (and MoE): none unless ``use_sliding_window`` (default false; then
      layers i >= ``max_window_layers``, Qwen2Config's default 28).
    - gemma2, gemma3_text: ``layer_types`` when config.json lists them, else layer i is
      local unless (i + 1) % period == 0, period 2 (Gemma2Config) or
      ``sliding_window_pattern`` (Gemma3TextConfig, default 6).
    - any other family: none (LlamaConfig, GemmaConfig have no window).
    A null (or 0) window means none; a window at least the context drops nothing (min()).
    """
    if model_type not in _EVERY_LAYER | _QWEN | {"gemma2", "gemma3_text"}:
        return {}
    if "sliding_window" in cfg:
        raw = cfg["sliding_window"]
        window = 0 if raw is None or (raw == 0 and not isinstance(raw, bool)) \
            else _int(cfg, "sliding_window")
    else:
        window = _DEFAULT_WINDOW.get(model_type, 0)
    if not window:
        return {}
    if model_type in _EVERY_LAYER:
        return {"sliding_window": window, "sliding_layers": every_layer(layers)}
    if model_type in _QWEN:
        if not _bool(cfg, "use_sliding_window", False):
            return {}
        first = cfg.get("max_window_layers", 28)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise HfConfigError("config.json max_window_layers must be a layer count >= 0")
        return {"sliding_window": window,
                "sliding_layers": tuple(range(min(first, layers), layers))}
    types = cfg.get("layer_types")
    if types is not None:
        if (not isinstance(types, list) or len(types) != layers
                or not all(t in ("sliding_attention", "full_attention") for t in types)):
            raise HfConfigError(f"config.json layer_types must list {layers} entries, each "
                                "'sliding_attention' or 'full_attention'")
        local = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    else:
        period = 2 if model_type == "gemma2" else _int(cfg, "sliding_window_pattern", default=6)
        local = local_global(layers, period)
    return {"sliding_window": window, "sliding_layers": local} if local else {}


def _qwen_moe_dense_layers(cfg: dict[str, Any], layers: int) -> int:
    """Qwen2MoeDecoderLayer: layer i is sparse unless listed in mlp_only_layers or
    (i + 1) % decoder_sparse_step != 0."""
    step = _int(cfg, "decoder_sparse_step", default=1)
    only = cfg.get("mlp_only_layers") or []
    if not isinstance(only, list):
        raise HfConfigError("config.json mlp_only_layers must be a list of layer numbers")
    dense_ids = {i for i in only if isinstance(i, int)}
    return sum(1 for i in range(layers) if i in dense_ids or (i + 1) % step != 0)


def _llama_like(cfg: dict[str, Any], name: str, model_type: str) -> Architecture:
    h = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    layers = _int(cfg, "num_hidden_layers")
    gemma = model_type.startswith("gemma")
    qwen_moe = model_type in ("qwen2_moe", "qwen3_moe")
    experts = _int(cfg, "num_local_experts", "num_experts", default=1)
    moe = experts > 1
    expert_w = _int(cfg, "moe_intermediate_size") if qwen_moe and moe else None
    shared = (_int(cfg, "shared_expert_intermediate_size", default=0)
              if model_type == "qwen2_moe" and cfg.get("shared_expert_intermediate_size")
              else 0)
    return Architecture(
        name=name,
        layers=layers,
        hidden_size=h,
        heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=_head_dim(cfg),
        intermediate_size=_int(cfg, "intermediate_size"),
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", default=4096),
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", default=1) if moe else 1,
        moe_intermediate_size=expert_w,
        shared_expert_size=shared,
        shared_expert_gate=shared > 0,
        dense_layers=_qwen_moe_dense_layers(cfg, layers) if qwen_moe and moe else 0,
        qk_norm=model_type in ("qwen3", "qwen3_moe", "gemma3_text"),
        # Gemma's configs tie by default; the others' classes default to untied.
        tie_embeddings=_bool(cfg, "tie_word_embeddings", gemma),
        # Qwen2 (and Qwen2-MoE) put biases on q/k/v without a config key.
        attention_bias=_bool(cfg, "attention_bias", model_type in ("qwen2", "qwen2_moe")),
        mlp_bias=_bool(cfg, "mlp_bias", False),
        norms_per_layer=4 if model_type in ("gemma2", "gemma3_text") else 2,
        family="phi3" if model_type == "phi3" else "llama",
        **_sliding(cfg, model_type, layers),
    )


_LLAMA_LIKE = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3",
    "gemma", "gemma2", "gemma3_text",
})
_OTHERS: dict[str, Callable[[dict[str, Any], str], Architecture]] = {
    "gpt2": _gpt2,
    "gpt_bigcode": _gpt_bigcode,
    "opt": _opt,
    "gpt_neox": _gpt_neox,
    "mpt": _mpt,
    "starcoder2": _starcoder2,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}
_FALCON = frozenset({"falcon", "refinedweb", "refinedwebmodel"})
MODEL_TYPES: tuple[str, ...] = tuple(sorted(_LLAMA_LIKE | set(_OTHERS) | _FALCON))


def architecture_from_hf_config(cfg: dict[str, Any], name: str = "custom") -> Architecture:
    """A parsed config.json -> Architecture.

    Raises HfConfigError when the config is not an object or misses or garbles a field
    the estimate needs."""
    if not isinstance(cfg, dict):
        raise HfConfigError("config.json must hold a JSON object")
    raw_type = cfg.get("model_type", "llama")
    if not isinstance(raw_type, str):
        raise HfConfigError("config.json model_type must be a string")
    model_type = raw_type.strip().lower()
    if model_type in _FALCON:
        return _falcon(cfg, name, model_type)
    if model_type in _OTHERS:
        return _OTHERS[model_type](cfg, name)
    if model_type in _LLAMA_LIKE:
        return _llama_like(cfg, name, model_type)
    raise HfConfigError(
        f"model_type {raw_type[:60]!r} is not one gpuopt reads ({', '.join(MODEL_TYPES)}); "
        "give `params:` (with layers / hidden_size / heads if known) instead")


def parse_hf_config(text: bytes, where: str, name: str) -> Architecture:
    """A config.json's bytes (from a file or the Hub) -> Architecture; ``where`` names it
    in errors.

    Raises HfConfigError when the bytes are not a usable config.json."""
    try:
        cfg = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise HfConfigError(f"cannot read {where}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise HfConfigError(f"{where} is not valid JSON (line {exc.lineno}): {exc.msg}") \
            from exc
    except (ValueError, RecursionError) as exc:  # e.g. a 5,000-digit number, 10^5 brackets
        raise HfConfigError(f"{where} is not a usable JSON file: {str(exc)[:100]}") from None
    return architecture_from_hf_config(cfg, name)


def load_hf_config(path: Path, name: str | None = None) -> Architecture:
    """The Architecture of the config.json at ``path``.

    Raises HfConfigError when the file is missing, unreadable or not a usable config."""
    try:
        data = read_bounded(path, MAX_CONFIG_BYTES)
    except FileNotFoundError as exc:
        raise HfConfigError(f"{path} does not exist") from exc
    except UnreadableFile as exc:
        raise HfConfigError(f"cannot read {exc}") from None
    except OSError as exc:
        raise HfConfigError(f"cannot read {path}: {exc}") from exc
    arch = parse_hf_config(data, str(path), name or "custom")
    if name is not None:
        return arch
    return dataclasses.replace(arch, name=config_model_name(data, arch))


def config_model_name(data: bytes, arch: Architecture) -> str:
    """What a model given by a config.json file is called: the model it was saved from
    (``_name_or_path``'s last part), else its type and size (``qwen3-14.8b``) -- never the
    folder the file happens to be in."""
    try:
        cfg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        cfg = {}
    saved_from = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    if isinstance(saved_from, str) and saved_from.strip():
        return saved_from.strip().rstrip("/").rsplit("/", 1)[-1][:64]
    kind = cfg.get("model_type") if isinstance(cfg, dict) else None
    size = arch.params / 1e9
    shown = f"{size:.1f}b" if size >= 1 else f"{arch.params / 1e6:.0f}m"
    return f"{kind if isinstance(kind, str) and kind else 'custom'}-{shown}"
