"""Built-in table of real transformer architectures and their parameter counts.

Values are those of each model's Hugging Face ``config.json`` (hub id in ``hf_id``).
Parameter counts are computed from the shapes, never typed in; tests compare them with
the totals the model cards publish.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Architecture:
    name: str
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int = 4096
    head_dim: int | None = None  # None: hidden_size // heads
    gated_mlp: bool = True  # SwiGLU (3 matrices) vs GELU MLP (2 matrices)
    num_experts: int = 1  # MoE: experts per layer (all stored)
    experts_per_token: int = 1  # MoE: experts active per token
    tie_embeddings: bool = False
    attention_bias: bool = False  # biases on q/k/v (and o when mlp_bias is set too)
    mlp_bias: bool = False  # biases on the MLP and output projections (GPT-2, OPT)
    norm_bias: bool = False  # LayerNorm (weight + bias) vs RMSNorm (weight)
    norms_per_layer: int = 2  # Falcon-7B's parallel block has 1
    learned_positions: int = 0  # rows of a learned position table (GPT-2, OPT)
    hf_id: str | None = None
    family: str = "llama"  # module naming: llama | falcon | gpt2 | opt | phi3 (modules.py)
    params_override: int | None = None  # explicit `params:` from the job spec
    # computed once from the shapes (the planner reads them for every configuration)
    _params: int = field(init=False, repr=False, compare=False, default=0)
    _active: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        params = self.params_override or self.computed_params()
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_active", self._active_params(params))

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden_size // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection output: kv_heads x head_dim (GQA/MQA aware)."""
        return self.kv_heads * self.dim_head

    @property
    def q_dim(self) -> int:
        return self.heads * self.dim_head

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear module in one block, by HF/PEFT target name."""
        h, i = self.hidden_size, self.intermediate_size
        shapes = {
            "q_proj": (h, self.q_dim),
            "k_proj": (h, self.kv_dim),
            "v_proj": (h, self.kv_dim),
            "o_proj": (self.q_dim, h),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }
        if self.gated_mlp:
            shapes["gate_proj"] = (h, i)
        return shapes

    def expert_count(self, module: str) -> int:
        return self.num_experts if module in ("gate_proj", "up_proj", "down_proj") else 1

    def block_linear_params(self) -> int:
        """Weights of all linear layers in one block (all experts), without biases."""
        return sum(a * b * self.expert_count(m) for m, (a, b) in self.linear_shapes().items())

    def block_bias_params(self) -> int:
        n = 0
        if self.attention_bias:
            n += self.q_dim + 2 * self.kv_dim
        if self.mlp_bias:
            n += self.hidden_size + (self.intermediate_size + self.hidden_size) * self.num_experts
        return n

    def norm_params(self) -> int:
        return self.hidden_size * (2 if self.norm_bias else 1)

    def block_params(self) -> int:
        router = self.hidden_size * self.num_experts if self.is_moe else 0
        return (
            self.block_linear_params()
            + self.block_bias_params()
            + router
            + self.norms_per_layer * self.norm_params()
        )

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    def head_params(self) -> int:
        """The output projection (lm_head); 0 when tied to the input embedding."""
        return 0 if self.tie_embeddings else self.vocab_size * self.hidden_size

    def computed_params(self) -> int:
        return (
            self.embedding_params()
            + self.learned_positions * self.hidden_size
            + self.layers * self.block_params()
            + self.norm_params()  # final norm
            + self.head_params()
        )

    @property
    def params(self) -> int:
        return self._params

    @property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: only experts_per_token experts)."""
        return self._active

    def _active_params(self, params: int) -> int:
        if not self.is_moe:
            return params
        per_expert = sum(
            a * b for m, (a, b) in self.linear_shapes().items() if self.expert_count(m) > 1
        )
        idle = self.layers * per_expert * (self.num_experts - self.experts_per_token)
        return params - idle


def _llama(name: str, hf_id: str, h: int, layers: int, heads: int, kv: int, i: int, vocab: int,
           max_pos: int, **kw: object) -> Architecture:
    return Architecture(name=name, hf_id=hf_id, hidden_size=h, layers=layers, heads=heads,
                        kv_heads=kv, intermediate_size=i, vocab_size=vocab,
                        max_position_embeddings=max_pos, **kw)  # type: ignore[arg-type]


_TABLE: tuple[Architecture, ...] = (
    _llama("llama-2-7b", "meta-llama/Llama-2-7b-hf", 4096, 32, 32, 32, 11008, 32000, 4096),
    _llama("llama-2-13b", "meta-llama/Llama-2-13b-hf", 5120, 40, 40, 40, 13824, 32000, 4096),
    _llama("llama-2-70b", "meta-llama/Llama-2-70b-hf", 8192, 80, 64, 8, 28672, 32000, 4096),
    _llama("llama-3-8b", "meta-llama/Meta-Llama-3-8B", 4096, 32, 32, 8, 14336, 128256, 8192),
    _llama("llama-3-70b", "meta-llama/Meta-Llama-3-70B", 8192, 80, 64, 8, 28672, 128256, 8192),
    _llama("llama-3.1-8b", "meta-llama/Llama-3.1-8B", 4096, 32, 32, 8, 14336, 128256, 131072),
    _llama("llama-3.1-70b", "meta-llama/Llama-3.1-70B", 8192, 80, 64, 8, 28672, 128256, 131072),
    _llama("mistral-7b", "mistralai/Mistral-7B-v0.1", 4096, 32, 32, 8, 14336, 32000, 32768),
    _llama("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 4096, 32, 32, 8, 14336, 32000, 32768,
           num_experts=8, experts_per_token=2),
    _llama("qwen2.5-7b", "Qwen/Qwen2.5-7B", 3584, 28, 28, 4, 18944, 152064, 131072,
           attention_bias=True),
    _llama("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", 3072, 32, 32, 32, 8192, 32064,
           4096, family="phi3"),
    # Falcon-7B: multi-query attention (1 K/V head), parallel attention+MLP sharing one
    # LayerNorm, GELU MLP of 4h, no linear biases, lm_head tied to the embedding.
    Architecture(name="falcon-7b", hf_id="tiiuae/falcon-7b", hidden_size=4544, layers=32,
                 heads=71, kv_heads=1, intermediate_size=4 * 4544, vocab_size=65024,
                 max_position_embeddings=2048, gated_mlp=False, tie_embeddings=True,
                 norm_bias=True, norms_per_layer=1, family="falcon"),
    Architecture(name="gpt2", hf_id="openai-community/gpt2", hidden_size=768, layers=12, heads=12,
                 kv_heads=12, intermediate_size=3072, vocab_size=50257,
                 max_position_embeddings=1024, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=1024,
                 family="gpt2"),
    # OPT keeps 2 extra rows in its learned position table (offset 2).
    Architecture(name="opt-1.3b", hf_id="facebook/opt-1.3b", hidden_size=2048, layers=24,
                 heads=32, kv_heads=32, intermediate_size=8192, vocab_size=50272,
                 max_position_embeddings=2048, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=2050,
                 family="opt"),
)

ARCHITECTURES: Mapping[str, Architecture] = MappingProxyType({a.name: a for a in _TABLE})


def _key(name: str) -> str:
    key = name.strip().lower()
    key = key.split("/")[-1]
    key = re.sub(r"^(meta-)", "", key)
    key = re.sub(r"[-_](hf|v0\.1|instruct|4k-instruct|chat)$", "", key)
    return key.replace("_", "-")


_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        **{_key(a.name): a.name for a in _TABLE},
        **{_key(a.hf_id): a.name for a in _TABLE if a.hf_id},
        "llama-3-8b-instruct": "llama-3-8b",
        "llama-3.1-8b-instruct": "llama-3.1-8b",
        "phi-3-mini-4k": "phi-3-mini",
        "gpt-2": "gpt2",
    }
)


def find_architecture(name: str) -> Architecture | None:
    """Look a model up by table name or Hugging Face id (case-insensitive)."""
    canon = _ALIASES.get(_key(name)) or _ALIASES.get(name.strip().lower())
    return ARCHITECTURES[canon] if canon else None


def architecture_from_params(params: int, gated: bool = True,
                             **given: int | None) -> Architecture:
    """A Llama-shaped architecture for an explicit parameter count.

    Unknown dimensions follow the Llama family's proportions (head_dim 128, depth
    ~ hidden/128, SwiGLU intermediate 8/3 h rounded to 256, vocab 32000): params ~ 12 L h^2.
    ``gated=False``: a plain GELU MLP of 4 h (GPT-2, OPT, Falcon, MPT, BLOOM), the same
    12 L h^2. Whatever the spec gives explicitly wins. The count itself is always ``params``.
    """
    h = given.get("hidden_size")
    layers = given.get("layers")
    if h is None:
        if layers:
            h = int(math.sqrt(params / (12 * layers)))
        else:
            h = int((params * 128 / 12) ** (1 / 3))
        h = max(128, round(h / 128) * 128)
    if layers is None:
        layers = max(1, round(params / (12 * h * h)))
    heads = given.get("heads") or max(1, h // 128)
    kv_heads = given.get("kv_heads") or heads
    default_inter = round(8 * h / 3 / 256) * 256 if gated else 4 * h
    inter = given.get("intermediate_size") or max(256, default_inter)
    vocab = given.get("vocab_size") or 32000
    return Architecture(
        name=f"custom-{params}",
        layers=layers,
        hidden_size=h,
        heads=heads,
        kv_heads=kv_heads,
        intermediate_size=inter,
        vocab_size=vocab,
        gated_mlp=gated,
        params_override=params,
    )
