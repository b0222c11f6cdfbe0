"""Read a Hugging Face ``config.json`` into an :class:`Architecture`.

Key names per family, as the transformers configuration classes define them:
llama/mistral/mixtral/qwen2/phi3 (``hidden_size``, ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``,
``num_local_experts``, ``num_experts_per_tok``), falcon (``multi_query``, ``n_head_kv``,
``new_decoder_architecture``), gpt2 (``n_embd``, ``n_layer``, ``n_head``, ``n_inner``,
``n_positions``), opt (``ffn_dim``, ``word_embed_proj_dim``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.bounded_read import UnreadableFile, read_bounded

# A Hugging Face config.json is a few KiB; a file beyond this is not one.
MAX_CONFIG_BYTES = 1 << 20
# No dimension of a real model comes near this; it keeps the estimates' arithmetic finite.
MAX_DIMENSION = 10**9


class HfConfigError(ValueError):
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


def architecture_from_hf_config(cfg: dict[str, Any], name: str = "custom") -> Architecture:
    if not isinstance(cfg, dict):
        raise HfConfigError("config.json must hold a JSON object")
    model_type = str(cfg.get("model_type", "llama")).lower()
    if model_type == "gpt2":
        h = _int(cfg, "n_embd", "hidden_size")
        heads = _int(cfg, "n_head", "num_attention_heads")
        n_pos = _int(cfg, "n_positions", "max_position_embeddings", default=1024)
        return Architecture(
            name=name, layers=_int(cfg, "n_layer", "num_hidden_layers"), hidden_size=h,
            heads=heads, kv_heads=heads, intermediate_size=_int(cfg, "n_inner", default=4 * h),
            vocab_size=_int(cfg, "vocab_size"), max_position_embeddings=n_pos,
            gated_mlp=False, tie_embeddings=bool(cfg.get("tie_word_embeddings", True)),
            attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=n_pos,
            family="gpt2",
        )
    if model_type == "opt":
        h = _int(cfg, "hidden_size")
        heads = _int(cfg, "num_attention_heads")
        n_pos = _int(cfg, "max_position_embeddings", default=2048)
        return Architecture(
            name=name, layers=_int(cfg, "num_hidden_layers"), hidden_size=h, heads=heads,
            kv_heads=heads, intermediate_size=_int(cfg, "ffn_dim", default=4 * h),
            vocab_size=_int(cfg, "vocab_size"), max_position_embeddings=n_pos,
            gated_mlp=False, tie_embeddings=bool(cfg.get("tie_word_embeddings", True)),
            attention_bias=bool(cfg.get("enable_bias", True)),
            mlp_bias=bool(cfg.get("enable_bias", True)), norm_bias=True,
            learned_positions=n_pos + 2,  # OPTLearnedPositionalEmbedding offset of 2
            family="opt",
        )
    if model_type in ("falcon", "refinedweb", "refinedwebmodel"):
        h = _int(cfg, "hidden_size", "n_embd")
        heads = _int(cfg, "num_attention_heads", "n_head")
        new_arch = bool(cfg.get("new_decoder_architecture", False))
        if new_arch:
            kv = _int(cfg, "num_kv_heads", "n_head_kv", default=heads)
        elif cfg.get("multi_query", True):
            kv = 1
        else:
            kv = heads
        return Architecture(
            name=name, layers=_int(cfg, "num_hidden_layers", "n_layer"), hidden_size=h,
            heads=heads, kv_heads=kv, intermediate_size=_int(cfg, "ffn_hidden_size",
                                                             default=4 * h),
            vocab_size=_int(cfg, "vocab_size"),
            max_position_embeddings=_int(cfg, "max_position_embeddings", default=2048),
            gated_mlp=False, tie_embeddings=bool(cfg.get("tie_word_embeddings", True)),
            attention_bias=bool(cfg.get("bias", False)), mlp_bias=bool(cfg.get("bias", False)),
            norm_bias=True,
            norms_per_layer=2 if new_arch or not cfg.get("parallel_attn", True) else 1,
            family="falcon",
        )
    # llama, mistral, mixtral, qwen2, phi3 and other Llama-shaped decoders.
    h = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    head_dim = cfg.get("head_dim")
    return Architecture(
        name=name,
        layers=_int(cfg, "num_hidden_layers"),
        hidden_size=h,
        heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=head_dim if isinstance(head_dim, int) and head_dim > 0 else None,
        intermediate_size=_int(cfg, "intermediate_size"),
        vocab_size=_int(cfg, "vocab_size"),
        max_position_embeddings=_int(cfg, "max_position_embeddings", default=4096),
        num_experts=_int(cfg, "num_local_experts", "num_experts", default=1),
        experts_per_token=_int(cfg, "num_experts_per_tok", default=1),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        # Qwen2 puts biases on q/k/v without a config key; others say attention_bias.
        attention_bias=bool(cfg.get("attention_bias", model_type == "qwen2")),
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        family="phi3" if model_type == "phi3" else "llama",
    )


def load_hf_config(path: Path, name: str | None = None) -> Architecture:
    try:
        cfg = json.loads(read_bounded(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError as exc:
        raise HfConfigError(f"{path} does not exist") from exc
    except UnreadableFile as exc:
        raise HfConfigError(f"cannot read {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HfConfigError(f"cannot read {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise HfConfigError(f"{path} is not valid JSON (line {exc.lineno}): {exc.msg}") from exc
    except (ValueError, RecursionError) as exc:  # e.g. a 5,000-digit number, 10^5 brackets
        raise HfConfigError(f"{path} is not a usable JSON file: {str(exc)[:100]}") from None
    return architecture_from_hf_config(cfg, name or path.parent.name or "custom")
