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
    intermediate_size: int  # the dense MLP's width (MoE: see moe_intermediate_size)
    vocab_size: int
    max_position_embeddings: int = 4096
    head_dim: int | None = None  # None: hidden_size // heads (MLA: the q/k head, nope + rope)
    gated_mlp: bool = True  # SwiGLU/GeGLU (3 matrices) vs GELU MLP (2 matrices)
    num_experts: int = 1  # MoE: routed experts per MoE layer (all stored)
    experts_per_token: int = 1  # MoE: routed experts active per token
    # MoE: one routed expert's MLP width; None: intermediate_size (Mixtral's config has
    # only intermediate_size; Qwen-MoE and DeepSeek give moe_intermediate_size).
    moe_intermediate_size: int | None = None
    # MoE: total MLP width of the always-active shared expert(s): Qwen2-MoE's
    # shared_expert_intermediate_size, DeepSeek's n_shared_experts x moe_intermediate_size.
    shared_expert_size: int = 0
    shared_expert_gate: bool = False  # Qwen2-MoE: a sigmoid gate (hidden -> 1) on it
    # MoE: layers whose MLP is dense (intermediate_size) instead of experts: DeepSeek's
    # first_k_dense_replace, Qwen-MoE's mlp_only_layers / decoder_sparse_step.
    dense_layers: int = 0
    qk_norm: bool = False  # RMSNorm over each q and k head (Qwen3, Gemma-3): 2 x head_dim
    # Multi-head latent attention (DeepSeek-V2/V3): K and V are stored as one compressed
    # latent of kv_lora_rank plus a shared rope key of qk_rope_head_dim per token and
    # layer. 0: ordinary (MHA/GQA/MQA) attention.
    kv_lora_rank: int = 0
    q_lora_rank: int = 0  # MLA: low-rank query (0: a full q_proj, as in V2-Lite)
    qk_rope_head_dim: int = 0
    v_head_dim: int | None = None  # MLA: value head width (None: head_dim)
    tie_embeddings: bool = False
    attention_bias: bool = False  # biases on q/k/v (and o when mlp_bias is set too)
    mlp_bias: bool = False  # biases on the MLP and output projections (GPT-2, OPT)
    norm_bias: bool = False  # LayerNorm (weight + bias) vs RMSNorm (weight)
    norms_per_layer: int = 2  # Falcon-7B's parallel block has 1; Gemma-2's sandwich has 4
    learned_positions: int = 0  # rows of a learned position table (GPT-2, OPT)
    # Sliding-window attention: the layers (0-based) that attend to only the last
    # ``sliding_window`` tokens, so an engine keeps at most that many tokens of their KV
    # cache (kv_layer_tokens). 0 / (): every layer attends to the whole context.
    sliding_window: int = 0
    sliding_layers: tuple[int, ...] = ()
    hf_id: str | None = None
    # module naming (modules.py): llama | falcon | neox | gpt2 | opt | phi3 | mpt |
    # starcoder2 | deepseek
    family: str = "llama"
    params_override: int | None = None  # explicit `params:` from the job spec
    # computed once from the shapes (the planner reads them for every configuration)
    _params: int = field(init=False, repr=False, compare=False, default=0)
    _active: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        # one order and type, however given (a stored spec's JSON gives a list)
        object.__setattr__(self, "sliding_layers", tuple(sorted(set(self.sliding_layers))))
        if self.sliding_window < 0 or any(not 0 <= i < self.layers for i in self.sliding_layers):
            raise ValueError(f"{self.name}: sliding_window must be >= 0 and sliding_layers "
                             f"layer numbers 0..{self.layers - 1}")
        params = self.params_override or self.computed_params()
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_active", self._active_params(params))

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden_size // self.heads

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection output: kv_heads x head_dim (GQA/MQA aware).
        MLA: the decompressed K width the attention kernel sees in training."""
        return self.kv_heads * self.dim_head

    @property
    def q_dim(self) -> int:
        return self.heads * self.dim_head

    @property
    def o_dim(self) -> int:
        """Input width of the output projection (MLA: heads x v_head_dim)."""
        return self.heads * (self.v_head_dim or self.dim_head) if self.is_mla else self.q_dim

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def expert_size(self) -> int:
        """One routed expert's MLP width (the dense MLP's for a dense model)."""
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def moe_layers(self) -> int:
        return max(0, self.layers - self.dense_layers) if self.is_moe else 0

    @property
    def active_mlp_width(self) -> int:
        """MLP width a token passes through in a typical layer (MoE: its routed experts
        and the shared expert)."""
        if not self.is_moe:
            return self.intermediate_size
        return self.expert_size * self.experts_per_token + self.shared_expert_size

    @property
    def windowed_layers(self) -> int:
        """Layers with a sliding window (0 when the model has none)."""
        return len(self.sliding_layers) if self.sliding_window else 0

    def kv_layer_tokens(self, tokens: int) -> int:
        """Tokens of KV cache summed over the layers for a ``tokens``-long sequence: a
        full-attention layer keeps all of them, a sliding-window layer at most
        ``sliding_window`` (what transformers' sliding-window cache layers allocate, what
        vLLM's hybrid KV cache manager keeps once it frees the blocks that fell out of the
        window, and what llama.cpp's SWA cache keeps per sequence)."""
        windowed = self.windowed_layers
        if not windowed:
            return self.layers * tokens
        return (self.layers - windowed) * tokens + windowed * min(tokens, self.sliding_window)

    def kv_cache_width(self, tp: int = 1) -> int:
        """Elements cached per token and layer on one of ``tp`` tensor-parallel GPUs.

        MHA/GQA/MQA: K and V, kv_heads x head_dim each; the KV heads split over the
        GPUs, and with fewer KV heads than GPUs (MQA) each GPU keeps a replica of its head.
        MLA: the compressed latent plus the rope key, kv_lora_rank + qk_rope_head_dim
        (DeepSeek-V2 paper, section 2.1.2; vLLM caches exactly this and replicates it on
        every tensor-parallel rank).
        """
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        heads_per_gpu = max(1, -(-self.kv_heads // tp))
        return 2 * heads_per_gpu * self.dim_head

    def attention_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each attention linear module, by HF/PEFT target name."""
        h = self.hidden_size
        if self.is_mla:
            nope = self.dim_head - self.qk_rope_head_dim
            v = self.v_head_dim or self.dim_head
            shapes: dict[str, tuple[int, int]] = {}
            if self.q_lora_rank:
                shapes["q_a_proj"] = (h, self.q_lora_rank)
                shapes["q_b_proj"] = (self.q_lora_rank, self.q_dim)
            else:
                shapes["q_proj"] = (h, self.q_dim)
            shapes["kv_a_proj_with_mqa"] = (h, self.kv_lora_rank + self.qk_rope_head_dim)
            shapes["kv_b_proj"] = (self.kv_lora_rank, self.heads * (nope + v))
            shapes["o_proj"] = (self.o_dim, h)
            return shapes
        return {
            "q_proj": (h, self.q_dim),
            "k_proj": (h, self.kv_dim),
            "v_proj": (h, self.kv_dim),
            "o_proj": (self.q_dim, h),
        }

    def mlp_shapes(self, width: int) -> dict[str, tuple[int, int]]:
        h = self.hidden_size
        shapes = {"up_proj": (h, width), "down_proj": (width, h)}
        if self.gated_mlp:
            shapes["gate_proj"] = (h, width)
        return shapes

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear module in one block, by HF/PEFT target name (MoE: of
        one routed expert, see expert_count)."""
        return {**self.attention_shapes(), **self.mlp_shapes(self.expert_size)}

    def expert_count(self, module: str) -> int:
        return self.num_experts if module in ("gate_proj", "up_proj", "down_proj") else 1

    def _mlp_linear(self, width: int) -> int:
        return sum(a * b for a, b in self.mlp_shapes(width).values())

    def block_linear_params(self) -> int:
        """Weights of all linear layers in one (MoE: expert) block, all experts, without
        biases, shared experts or routers."""
        return sum(a * b * self.expert_count(m) for m, (a, b) in self.linear_shapes().items())

    def linear_params(self) -> int:
        """Weights of every linear layer of every block (what weight quantization
        converts): attention, dense MLPs, routed and shared experts; no router."""
        attn = sum(a * b for a, b in self.attention_shapes().values())
        moe = self.moe_layers
        dense = self.layers - moe
        per_moe = (self.num_experts * self._mlp_linear(self.expert_size)
                   + (self._mlp_linear(self.shared_expert_size) if self.shared_expert_size
                      else 0))
        return (self.layers * attn + dense * self._mlp_linear(self.intermediate_size)
                + moe * per_moe)

    def block_bias_params(self) -> int:
        n = 0
        if self.attention_bias:
            n += self.q_dim + 2 * self.kv_dim
        if self.mlp_bias:
            n += self.hidden_size + (self.intermediate_size + self.hidden_size) * self.num_experts
        return n

    def norm_params(self) -> int:
        return self.hidden_size * (2 if self.norm_bias else 1)

    def block_norm_params(self) -> int:
        n = self.norms_per_layer * self.norm_params()
        if self.qk_norm:
            n += 2 * self.dim_head
        if self.is_mla:
            n += self.kv_lora_rank + self.q_lora_rank  # kv_a_layernorm, q_a_layernorm
        return n

    def router_params(self) -> int:
        """Router (and shared-expert gate) weights of all MoE layers."""
        per = self.hidden_size * (self.num_experts + (1 if self.shared_expert_gate else 0))
        return self.moe_layers * per

    def blocks_params(self) -> int:
        return (
            self.linear_params()
            + self.layers * (self.block_bias_params() + self.block_norm_params())
            + self.router_params()
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
            + self.blocks_params()
            + self.norm_params()  # final norm
            + self.head_params()
        )

    @property
    def params(self) -> int:
        return self._params

    @property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: only experts_per_token routed experts)."""
        return self._active

    def _active_params(self, params: int) -> int:
        if not self.is_moe:
            return params
        idle = (self.moe_layers * self._mlp_linear(self.expert_size)
                * (self.num_experts - self.experts_per_token))
        return params - idle


def every_layer(layers: int) -> tuple[int, ...]:
    """Mistral-7B v0.1, Phi-3, StarCoder2: one window on every layer."""
    return tuple(range(layers))


def local_global(layers: int, period: int) -> tuple[int, ...]:
    """Interleaved local/global attention: layer i is windowed unless (i + 1) % period == 0
    (transformers: Gemma2Config's layer_types default, period 2, layers 0, 2, 4, ... local;
    Gemma3TextConfig's, period sliding_window_pattern = 6, five local then one global)."""
    return tuple(i for i in range(layers) if (i + 1) % period)


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
    # Mistral-7B v0.1: "sliding_window": 4096 in its config.json
    # (huggingface.co/mistralai/Mistral-7B-v0.1/resolve/main/config.json; copy in
    # tests/jobs/hf_configs), on every layer (MistralAttention). v0.2 and later set it null.
    _llama("mistral-7b", "mistralai/Mistral-7B-v0.1", 4096, 32, 32, 8, 14336, 32000, 32768,
           sliding_window=4096, sliding_layers=every_layer(32)),
    # Mixtral-8x7B v0.1: "sliding_window": null (tests/jobs/hf_configs): full attention.
    _llama("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 4096, 32, 32, 8, 14336, 32000, 32768,
           num_experts=8, experts_per_token=2),
    _llama("qwen2.5-7b", "Qwen/Qwen2.5-7B", 3584, 28, 28, 4, 18944, 152064, 131072,
           attention_bias=True),
    # Phi-3-mini-4k: "sliding_window": 2047 in its config.json (max_position_embeddings
    # 4096); transformers' Phi3Attention passes config.sliding_window on every layer.
    _llama("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", 3072, 32, 32, 32, 8192, 32064,
           4096, family="phi3", sliding_window=2047, sliding_layers=every_layer(32)),
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
    # GPT-2 medium / large / XL (config.json of openai-community/gpt2-medium, -large, -xl:
    # n_embd, n_layer, n_head; 4 x n_embd MLP, n_positions 1024, vocab 50257)
    Architecture(name="gpt2-medium", hf_id="openai-community/gpt2-medium", hidden_size=1024,
                 layers=24, heads=16, kv_heads=16, intermediate_size=4096, vocab_size=50257,
                 max_position_embeddings=1024, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=1024,
                 family="gpt2"),
    Architecture(name="gpt2-large", hf_id="openai-community/gpt2-large", hidden_size=1280,
                 layers=36, heads=20, kv_heads=20, intermediate_size=5120, vocab_size=50257,
                 max_position_embeddings=1024, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=1024,
                 family="gpt2"),
    Architecture(name="gpt2-xl", hf_id="openai-community/gpt2-xl", hidden_size=1600,
                 layers=48, heads=25, kv_heads=25, intermediate_size=6400, vocab_size=50257,
                 max_position_embeddings=1024, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=1024,
                 family="gpt2"),
    # OPT keeps 2 extra rows in its learned position table (offset 2).
    Architecture(name="opt-1.3b", hf_id="facebook/opt-1.3b", hidden_size=2048, layers=24,
                 heads=32, kv_heads=32, intermediate_size=8192, vocab_size=50272,
                 max_position_embeddings=2048, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, learned_positions=2050,
                 family="opt"),
    # --- current models (config.json values of each hf_id; totals checked against the
    # model cards in tests/jobs/test_architectures.py) ---
    _llama("llama-3.2-1b", "meta-llama/Llama-3.2-1B", 2048, 16, 32, 8, 8192, 128256, 131072,
           head_dim=64, tie_embeddings=True),
    _llama("llama-3.2-3b", "meta-llama/Llama-3.2-3B", 3072, 28, 24, 8, 8192, 128256, 131072,
           head_dim=128, tie_embeddings=True),
    _llama("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", 8192, 80, 64, 8, 28672,
           128256, 131072),
    _llama("qwen2.5-14b", "Qwen/Qwen2.5-14B", 5120, 48, 40, 8, 13824, 152064, 131072,
           attention_bias=True),
    _llama("qwen2.5-32b", "Qwen/Qwen2.5-32B", 5120, 64, 40, 8, 27648, 152064, 131072,
           attention_bias=True),
    _llama("qwen2.5-72b", "Qwen/Qwen2.5-72B", 8192, 80, 64, 8, 29568, 152064, 131072,
           attention_bias=True),
    # Qwen3: explicit head_dim 128, RMSNorm on every q and k head, no q/k/v biases.
    _llama("qwen3-8b", "Qwen/Qwen3-8B", 4096, 36, 32, 8, 12288, 151936, 40960,
           head_dim=128, qk_norm=True),
    # Qwen3-30B-A3B: 128 routed experts of 768, 8 per token, no shared expert; every
    # layer is MoE (decoder_sparse_step 1, mlp_only_layers []); q is 32 x 128 = 4096 wide,
    # twice the hidden size.
    _llama("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", 2048, 48, 32, 4, 6144, 151936, 40960,
           head_dim=128, qk_norm=True, num_experts=128, experts_per_token=8,
           moe_intermediate_size=768),
    # Gemma-2: head_dim 256 (9B) / 128 (27B) independent of hidden/heads, GeGLU MLP,
    # four RMSNorms per block (pre/post attention, pre/post MLP), tied embeddings.
    # Sliding window: "sliding_window": 4096 in both config.json files (no layer_types),
    # on layers 0, 2, 4, ... (Gemma2Config: "sliding_attention" if (i + 1) % 2 else
    # "full_attention"), so 21 of 42 / 23 of 46 layers are local.
    _llama("gemma-2-9b", "google/gemma-2-9b", 3584, 42, 16, 8, 14336, 256000, 8192,
           head_dim=256, norms_per_layer=4, tie_embeddings=True,
           sliding_window=4096, sliding_layers=local_global(42, 2)),
    _llama("gemma-2-27b", "google/gemma-2-27b", 4608, 46, 32, 16, 36864, 256000, 8192,
           head_dim=128, norms_per_layer=4, tie_embeddings=True,
           sliding_window=4096, sliding_layers=local_global(46, 2)),
    # Mistral-Nemo: head_dim 128 with 32 heads (q is 4096 wide, hidden 5120).
    _llama("mistral-nemo-12b", "mistralai/Mistral-Nemo-Base-2407", 5120, 40, 32, 8, 14336,
           131072, 1024000, head_dim=128),
    # "sliding_window": 262144 in its config.json: wider than the 131072-token context, so
    # it never drops a token (kept so the config reads back to this entry).
    _llama("phi-3.5-mini", "microsoft/Phi-3.5-mini-instruct", 3072, 32, 32, 32, 8192, 32064,
           131072, family="phi3", sliding_window=262144, sliding_layers=every_layer(32)),
    # DeepSeek-V2-Lite: MLA with a full q_proj (q_lora_rank null), K/V compressed to 512
    # + a 64-wide rope key; layer 0 dense (first_k_dense_replace 1, 10944 wide), the other
    # 26 MoE: 64 routed experts of 1408 (6 per token) + 2 shared (2 x 1408).
    Architecture(name="deepseek-v2-lite", hf_id="deepseek-ai/DeepSeek-V2-Lite",
                 hidden_size=2048, layers=27, heads=16, kv_heads=16, head_dim=128 + 64,
                 intermediate_size=10944, vocab_size=102400, max_position_embeddings=163840,
                 kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128, num_experts=64,
                 experts_per_token=6, moe_intermediate_size=1408, shared_expert_size=2 * 1408,
                 dense_layers=1, family="deepseek"),
    # MPT-7B: d_model 4096, n_layers 32, n_heads 32, expansion_ratio 4, ALiBi (no position
    # table), no_bias (no linear or LayerNorm biases), lm_head tied to wte.
    Architecture(name="mpt-7b", hf_id="mosaicml/mpt-7b", hidden_size=4096, layers=32, heads=32,
                 kv_heads=32, intermediate_size=4 * 4096, vocab_size=50432,
                 max_position_embeddings=2048, gated_mlp=False, tie_embeddings=True,
                 family="mpt"),
    # Pythia (GPT-NeoX): parallel attention + MLP (use_parallel_residual) with a LayerNorm
    # each, biases on every linear, untied embed_out.
    Architecture(name="pythia-6.9b", hf_id="EleutherAI/pythia-6.9b", hidden_size=4096,
                 layers=32, heads=32, kv_heads=32, intermediate_size=16384, vocab_size=50432,
                 max_position_embeddings=2048, gated_mlp=False, attention_bias=True,
                 mlp_bias=True, norm_bias=True, family="neox"),
    # StarCoder2-7B: GQA (4 KV heads of 128), GELU MLP c_fc/c_proj, use_bias, LayerNorm,
    # embeddings tied (Starcoder2Config's default; the config.json does not override it);
    # "sliding_window": 4096 on every layer (Starcoder2Attention), 16384-token context.
    Architecture(name="starcoder2-7b", hf_id="bigcode/starcoder2-7b", hidden_size=4608,
                 layers=32, heads=36, kv_heads=4, intermediate_size=18432, vocab_size=49152,
                 max_position_embeddings=16384, gated_mlp=False, tie_embeddings=True,
                 attention_bias=True, mlp_bias=True, norm_bias=True, family="starcoder2",
                 sliding_window=4096, sliding_layers=every_layer(32)),
    # Falcon-40B: the "new decoder architecture": 8 KV heads, parallel attention + MLP
    # with two LayerNorms (ln_attn, ln_mlp), no linear biases, tied embeddings.
    Architecture(name="falcon-40b", hf_id="tiiuae/falcon-40b", hidden_size=8192, layers=60,
                 heads=128, kv_heads=8, intermediate_size=4 * 8192, vocab_size=65024,
                 max_position_embeddings=2048, gated_mlp=False, tie_embeddings=True,
                 norm_bias=True, norms_per_layer=2, family="falcon"),
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
        "mistral-nemo": "mistral-nemo-12b",
        "mistral-nemo-base-2407": "mistral-nemo-12b",
        "mistral-nemo-instruct-2407": "mistral-nemo-12b",
        "llama-3.3-70b": "llama-3.3-70b",
        "deepseek-v2-lite-chat": "deepseek-v2-lite",
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
