"""Fine-tuning: trainable states (grads, optimizer, master weights) and activations."""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.memory.constants import (
    LOSS_CHUNKS,
    LOSS_FP32_COPIES,
    MASTER_WEIGHT_BYTES,
    MIXED_PRECISION_GRAD_BYTES,
    NON_FLASH_SCORE_BYTES,
    NORM_SAVED_BYTES,
    OFFLOADED_RESIDENT_BLOCKS,
    OPTIMIZER_BYTES,
    PAGED_OPTIMIZERS,
    PURE_BF16_STATE_SCALE,
    ZERO3_GATHER_BYTES_PER_LARGEST_LAYER_PARAM,
)
from gpuopt.jobs.estimate.memory.weights import QUANTIZED, compute_bytes, largest_matrix
from gpuopt.jobs.modules import block_modules, resolve_targets


def lora_targets(arch: Architecture, targets: tuple[str, ...]) -> tuple[str, ...]:
    """The Llama-style parts (q_proj .. down_proj) that carry an adapter."""
    return tuple(p for m in resolve_targets(arch, targets) for p in m.parts)


def lora_params(arch: Architecture, targets: tuple[str, ...], rank: int) -> int:
    """A (in x r) and B (r x out) per targeted module on its real (fused) shape, per
    layer; an MoE model's MLP modules: per routed expert and on the shared expert in its
    MoE layers (PEFT matches them by the same names), on the dense MLP in its dense
    layers. An MLP module is hidden <-> width either way: r x (hidden + width)."""
    total = 0
    h = arch.hidden_size
    for m in resolve_targets(arch, targets):
        if arch.is_moe and arch.expert_count(m.parts[0]) > 1:
            moe = arch.num_experts * rank * (h + arch.expert_size)
            if arch.shared_expert_size:
                moe += rank * (h + arch.shared_expert_size)
            total += arch.moe_layers * moe
            total += arch.dense_layers * rank * (h + arch.intermediate_size)
        else:
            total += arch.layers * rank * (m.shape[0] + m.shape[1])
    return total


def adafactor_state_bytes(arch: Architecture) -> float:
    """Factored second moment: (rows + cols) fp32 per matrix, full vectors for the rest."""
    per_layer = sum((a + b) * arch.expert_count(m) for m, (a, b) in arch.linear_shapes().items())
    matrices = arch.layers * per_layer + 2 * (arch.vocab_size + arch.hidden_size)
    return 4.0 * matrices


def trainable_states(
    arch: Architecture,
    method: str,
    precision: str,
    optimizer: str,
    targets: tuple[str, ...],
    rank: int,
    shards_optimizer: int,
    shards_grads: int,
    master_weights: bool = True,
    optimizer_in_backward: bool = False,
    offload: str = "none",
) -> dict[str, float]:
    """adapters / gradients / optimizer bytes per GPU (weights are counted elsewhere).

    Mixed precision (``master_weights``): fp32 gradients, an fp32 master copy and fp32
    states; pure bf16 (torchtune, litgpt): 16-bit gradients and states in the
    parameters' dtype, no master copy. Paged optimizer states are not resident.
    ``optimizer_in_backward``: each parameter's gradient is applied and freed as soon
    as it is computed, so at most the largest one is held. ``offload``: optimizer (or,
    with params, also the gradients) in host memory.
    """
    # 4-bit / 8-bit bases compute in 16 bits: a pure-bf16 framework makes the adapters
    # in that dtype too (torchtune's LoRALinear under the recipe's bf16 default dtype;
    # litgpt under Lightning's bitsandbytes plugin's dtype context)
    sixteen = precision in ("bf16", "fp16") or (method != "full" and precision in QUANTIZED)
    pure = sixteen and not master_weights
    if method == "full":
        n = arch.params
        grad_b = 2.0 if pure else (MIXED_PRECISION_GRAD_BYTES if sixteen else 4.0)
        master = MASTER_WEIGHT_BYTES if sixteen and not pure else 0
        adapters = 0.0
    else:
        n = lora_params(arch, targets, rank)
        # PEFT keeps adapter weights in fp32 under 16-bit bases (autocast_adapter_dtype);
        # pure-bf16 frameworks keep them in bf16
        grad_b, master = (2.0, 0) if pure else (4.0, 0)
        adapters = n * (2.0 if pure else 4.0)
    if optimizer == "adafactor":
        opt = adafactor_state_bytes(arch) if method == "full" else n * 4.0 * 0.1
    else:
        opt = n * OPTIMIZER_BYTES[optimizer]
    if pure:
        opt *= PURE_BF16_STATE_SCALE[optimizer]
    if optimizer in PAGED_OPTIMIZERS:
        opt = 0.0
    grads = n * grad_b / shards_grads
    if optimizer_in_backward:
        grads = min(grads, largest_matrix(arch) * grad_b)
    optim = (opt + n * master) / shards_optimizer
    if offload in ("optimizer", "params"):
        optim = 0.0
    if offload == "params":
        grads = 0.0
    return {"adapters": adapters, "gradients": grads, "optimizer": optim}


def peft_fp32_stream(precision: str, framework: str) -> bool:
    """Does k-bit training run with fp32 hidden states? Through PEFT, yes:
    prepare_model_for_kbit_training casts every 16-bit parameter that is not a
    bitsandbytes Params4bit to fp32 (peft/utils/other.py), the embeddings and the norms'
    weights included, so the embedding output, the residual stream and every norm's
    output (transformers LlamaRMSNorm: `self.weight * hidden_states.to(input_dtype)`,
    fp32 weight x 16-bit -> fp32) are fp32; transformers' flash-attention path warns of
    exactly this ("input hidden states seems to be silently casted in float32 ...
    upcasted embedding or layer norm layers in float32"). litgpt and torchtune keep
    them 16-bit. Only bitsandbytes 4-bit weights (nf4) are modelled this way.
    The size of the effect is reported, not fitted: bitsandbytes issue 1569 (Ministral-8B
    QLoRA, seq 4096, batch 1: 63 GB without prepare_model_for_kbit_training, 81 GB with
    it, far more than the +1 GB of fp32 weights), TRL PR 4335 (Qwen3-14B: 19.1 vs 14.2
    GB reserved with a narrower upcast)."""
    from gpuopt.jobs.estimate.memory import PEFT_FRAMEWORKS

    return precision == "nf4" and framework in PEFT_FRAMEWORKS


def zero3_gather_bytes(arch: Architecture, grad_bytes: float = 0.0) -> float:
    """Unsharded parameters of the layer being computed and of the prefetched next one
    (DeepSpeed's 4 bytes x largest layer), and, when the base weights train, that
    layer's unsharded gradient before it is reduce-scattered (``grad_bytes`` per
    parameter): FSDP2's post-backward hands the full-size `.grad` of every parameter of
    the unit to foreach_reduce (torch/distributed/_composable/fsdp/_fsdp_collectives.py),
    which only then scatters it to the shards. The largest unit is the vocabulary
    embedding / output projection, which torchtune shards as units of their own
    (`custom_sharded_layers: ['tok_embeddings', 'output']`, llama3_1/70B_full.yaml)
    and whose backward runs first, while the last block is prefetched."""
    largest = max(arch.vocab_size * arch.hidden_size, largest_matrix(arch))
    return (ZERO3_GATHER_BYTES_PER_LARGEST_LAYER_PARAM + grad_bytes) * largest


def _saves_input(module: str, method: str, precision: str, targets: tuple[str, ...],
                 lora_dropout: bool = False, quantized_saves_input: bool = True) -> bool:
    """Does autograd keep this linear's input for backward?

    Full fine-tuning: yes (weight gradient). Frozen 16-bit weights: no (PyTorch saves
    only what the requested gradients need). Quantized frozen weights: with
    bitsandbytes yes, MatMul4Bit / MatMul8bitLt save their input A whenever it needs a
    gradient; with torchao's NF4 no (``quantized_saves_input`` False, see
    QUANT_LINEAR_SAVES_WEIGHT_ONLY). LoRA targets: the adapter's A matrix needs the
    input, unless LoRA dropout is on, when A keeps the dropped copy instead (counted
    apart, see LORA_DROPOUT_FRAMEWORKS).
    """
    if method == "full" or (precision in QUANTIZED and quantized_saves_input):
        return True
    return module in targets and not lora_dropout


# Frameworks whose 4-bit base linears keep only the weight for backward: torchtune's
# FrozenNF4Linear runs torchao's linear_nf4, an autograd.Function whose forward keeps
# `ctx.nf4_weight = weight` and not its input (torchao/dtypes/nf4tensor.py, LinearNF4;
# torchtune's QLoRA tutorial: "only the 4-bit parameter will be stored for gradient
# computation"). PEFT, litgpt (Lightning's bitsandbytes plugin) and Unsloth run
# bitsandbytes' MatMul4Bit, which keeps the input too.
QUANT_LINEAR_SAVES_WEIGHT_ONLY = frozenset({"torchtune"})


# Frameworks whose LoRA applies dropout to the adapter's input by default. litgpt:
# finetune/lora.py `lora_dropout: float = 0.05` (and `lora_dropout = 0.05` in the
# 2023 lit-gpt script the resource tables ran, commit 8641822). torchtune's recipe
# configs set `lora_dropout: 0.0`, PEFT's LoraConfig defaults to 0.0, Unsloth
# recommends 0: their adapters read the module's input itself.
LORA_DROPOUT_FRAMEWORKS = frozenset({"litgpt"})
# A dropout in training keeps its mask for backward, one byte per element
# (at::native_dropout returns a bool mask, NativeDropoutBackward0 saves it).
DROPOUT_MASK_BYTES = 1
# Frameworks that compute q, k and v with one fused linear and split its output into
# views: litgpt's CausalSelfAttention (`qkv = self.attn(x)` / `self.qkv(x)`, then
# `qkv.split(...)` / `.view(...)`; lit_gpt/model.py at 8641822, litgpt/model.py now).
# q and k are RoPE'd into new tensors (apply_rope + torch.cat), but v reaches the
# attention kernel as a view of the fused output, and autograd saving a view keeps its
# whole base alive: with as many kv heads as heads the fused output (q, k and v) stays
# beside the roped q and k. With grouped kv heads litgpt expands k and v to every head
# first (expand + reshape in 2023, repeat_interleave now): copies, q-sized each.
FUSED_QKV_FRAMEWORKS = frozenset({"litgpt"})


def dropout_modules(arch: Architecture, targets: tuple[str, ...],
                    fused_qkv: bool = False) -> list[int]:
    """Input widths of the LoRA modules that each drop their own copy of the input:
    one per targeted module (PEFT, litgpt's LoRALinear), q/k/v targets sharing one
    when the framework fuses them (litgpt's LoRAQKVLinear has one dropout)."""
    widths: list[int] = []
    qkv_seen = False
    for m in resolve_targets(arch, targets):
        if fused_qkv and {"q_proj", "k_proj", "v_proj"} & set(m.parts):
            if qkv_seen:
                continue
            qkv_seen = True
        widths.append(m.shape[0])
    return widths


def fused_qkv_padded_lora_width(arch: Architecture, lora_parts: tuple[str, ...]) -> int:
    """Width of the adapter output litgpt's LoRAQKVLinear scatters into the fused qkv
    width when only some of q, k, v carry an adapter: `zero_pad` writes it with
    index_copy, whose backward keeps its source (derivatives.yaml: `source:
    grad.index_select(dim, index).expand_as(source)`), so that 16-bit output (after a
    reshape copy in 2023's lit-gpt) stays for backward. All three, or none: 0."""
    widths = {"q_proj": arch.q_dim, "k_proj": arch.kv_dim, "v_proj": arch.kv_dim}
    on = [p for p in widths if p in lora_parts]
    return 0 if len(on) in (0, 3) else sum(widths[p] for p in on)


def attention_kept_bytes(arch: Architecture, b: float, fused_qkv: bool) -> float:
    """q, k and v as the attention kernel keeps them for backward, per token."""
    if not fused_qkv:
        return b * (arch.q_dim + 2 * arch.kv_dim)
    if arch.kv_dim == arch.q_dim:  # v a view of the fused output + roped q and k
        return b * (arch.q_dim + 2 * arch.kv_dim) + b * (arch.q_dim + arch.kv_dim)
    return 3 * b * arch.q_dim  # roped q, k and v expanded to every head


def layer_activation_bytes(
    arch: Architecture,
    seq: int,
    batch: int,
    method: str,
    precision: str,
    targets: tuple[str, ...],
    rank: int,
    flash_attention: bool,
    fp32_stream: bool = False,
    lora_dropout: bool = False,
    fused_qkv: bool = False,
    quantized_saves_input: bool = True,
    compiled: bool = False,
) -> float:
    """Activations one transformer block keeps for backward (one micro-batch).

    Korthikanti et al. 2022 count 34*s*b*h + 5*a*s^2*b bytes for a GPT block with
    dropout; the same accounting is done here for the model's actual block: SwiGLU vs
    GELU MLP, intermediate size, GQA/MQA k/v widths, fp32 norm inputs, no dropout
    (modern fine-tuning recipes set it to 0), and which linear inputs autograd keeps.

    ``fp32_stream``: k-bit training through PEFT (see :func:`peft_fp32_stream`), where
    the norms' outputs are fp32, so (1) every 4-bit linear reading one makes and keeps
    its own 16-bit copy of it, and (2) the 4-bit MLP projections return fp32, so the
    MLP's intermediate tensors are kept in fp32.

    ``lora_dropout``: each LoRA module keeps a dropped 16-bit copy of its input and the
    dropout's mask (LORA_DROPOUT_FRAMEWORKS). ``fused_qkv``: see FUSED_QKV_FRAMEWORKS.
    ``compiled`` (torch.compile): see the note on the min-cut partitioner below.
    """
    b = compute_bytes(precision)
    tok = seq * batch
    h, i = arch.hidden_size, arch.active_mlp_width
    lt = lora_targets(arch, targets) if method != "full" else ()

    dropout = lora_dropout and bool(lt)

    def saves(m: str) -> bool:
        return _saves_input(m, method, precision, lt, dropout, quantized_saves_input)

    norm_b = NORM_SAVED_BYTES if not compiled or fp32_stream else b
    total: float = arch.norms_per_layer * norm_b * h  # the norms' (fp32) inputs
    mods = block_modules(arch)
    attn_in = sum(1 for m in mods if {"q_proj", "k_proj", "v_proj"} & set(m.parts))
    mlp_in = sum(1 for m in mods if {"gate_proj", "up_proj"} & set(m.parts))
    mlp_in_shared = arch.norms_per_layer == 1  # parallel block: MLP reads the same norm
    if fp32_stream and precision in QUANTIZED:
        # bitsandbytes Linear4bit.forward casts its input itself (`x =
        # x.to(self.compute_dtype)`): from an fp32 norm output that is a new tensor per
        # module, and MatMul4Bit keeps it for backward (`ctx.tensors = (A, B)` in the
        # bitsandbytes releases the calibrated QLoRA runs used; newer ones keep only B).
        # q, k and v (or gate and up) each keep their own copy instead of sharing one.
        copies = attn_in + (mlp_in if mlp_in_shared else 0)
        total += b * h * max(0, copies - 1)
        if not mlp_in_shared:
            total += b * h * max(0, mlp_in - 1)
    if any(saves(m) for m in ("q_proj", "k_proj", "v_proj")):
        total += b * h  # normed input of q/k/v
    total += attention_kept_bytes(arch, b, fused_qkv)  # q, k, v kept by the attention kernel
    total += b * arch.q_dim  # attention output (kept by flash attention for backward)
    if saves("o_proj"):
        total += b * arch.q_dim  # re-laid-out input of o_proj
    if not mlp_in_shared and any(saves(m) for m in ("gate_proj", "up_proj")):
        total += b * h
    # Linear4bit returns its input's dtype (`.to(inp_dtype)`): fp32 from an fp32 norm
    mb = 4 if fp32_stream and precision in QUANTIZED else b
    if arch.gated_mlp:
        # gate out (silu input), up out, silu out (mul operands); compiled, the silu
        # output is recomputed from the gate output in backward
        total += (2 if compiled else 3) * mb * i
    else:
        total += mb * i  # fc1 output = GELU input
    if saves("down_proj"):
        total += b * i  # input of the down projection
    total += b * rank * len(resolve_targets(arch, targets)) if lt else 0.0  # LoRA A outputs
    if dropout:  # each LoRA module's dropped input copy and its mask
        total += sum((b + DROPOUT_MASK_BYTES) * w
                     for w in dropout_modules(arch, targets, fused_qkv))
    if fused_qkv and lt:
        total += b * fused_qkv_padded_lora_width(arch, lt)
    total *= tok
    if not flash_attention:
        total += NON_FLASH_SCORE_BYTES * (b / 2) * arch.heads * seq * seq * batch
    return total


def activation_bytes(
    arch: Architecture,
    seq: int,
    batch: int,
    method: str,
    precision: str,
    targets: tuple[str, ...],
    rank: int,
    flash_attention: bool,
    checkpointing: bool | str,
    fp32_stream: bool = False,
    offload: bool = False,
    lora_dropout: bool = False,
    fused_qkv: bool = False,
    quantized_saves_input: bool = True,
    op_sac: bool = False,
    compiled: bool = False,
) -> float:
    """Stored activations at the start of backward plus one block's backward working set.

    With gradient checkpointing (full recomputation) only each block's input stays,
    2*s*b*h bytes at 16-bit (Korthikanti et al. 2022, section 4.2), and one block is
    recomputed at a time; 4*s*b*h with ``fp32_stream`` (the residual stream is fp32).
    Selective: every other block checkpointed (half the blocks keep everything, half
    only their input: torchtitan's `selective_ac_option = '2'`), or with ``op_sac``
    torchtitan's op-level policy (see OP_SAC_FRAMEWORKS). Offloaded activations: what is
    kept stays on the host but OFFLOADED_RESIDENT_BLOCKS blocks' worth.
    """
    mode = {True: "full", False: "none"}.get(checkpointing, checkpointing) \
        if isinstance(checkpointing, bool) else checkpointing
    per_layer = layer_activation_bytes(
        arch, seq, batch, method, precision, targets, rank, flash_attention, fp32_stream,
        lora_dropout, fused_qkv, quantized_saves_input, compiled,
    )
    stream = 4 if fp32_stream and precision in QUANTIZED else compute_bytes(precision)
    block_input = stream * seq * batch * arch.hidden_size
    kept: float
    if mode == "full":
        kept = arch.layers * block_input
    elif mode == "selective" and op_sac:
        kept = arch.layers * op_sac_block_bytes(arch, compute_bytes(precision)) * seq * batch
    elif mode == "selective":
        half = arch.layers // 2
        kept = half * block_input + (arch.layers - half) * per_layer
    else:
        kept = arch.layers * per_layer
    if offload:  # what is kept streams to the host: a couple of blocks' worth stay
        unit = block_input if mode == "full" else per_layer
        kept = min(kept, OFFLOADED_RESIDENT_BLOCKS * unit)
    return kept + per_layer  # + the block being (re)computed / back-propagated


# torch.compile's backward graph keeps what its min-cut partitioner chooses
# (torch/_functorch/partitioners.py, min_cut_rematerialization_partition): cheap
# pointwise ops fused into their neighbours are recomputed in backward rather than
# their outputs saved. In a block that is the norm's fp32 upcast (the 16-bit input and
# the per-token rstd are kept instead of the fp32 input) and the SwiGLU's silu output
# (recomputed from the gate projection's output). torchtune compiles each decoder
# layer (`compile: True`, training.compile_model); torchtitan each block.


# Frameworks whose `selective` activation checkpointing is per op: torchtitan's default
# (train_configs/llama3_8b.toml `selective_ac_option = 'op'`; parallelize_llama.py
# `_save_list` and `_custom_policy`, "Saves output of all compute ops, except every
# second mm") keeps, per block, the outputs of the 1st, 3rd, 5th ... matmul, the
# attention kernel's output and the block's input, and recomputes everything else.
OP_SAC_FRAMEWORKS = frozenset({"torchtitan"})


def op_sac_block_bytes(arch: Architecture, b: float) -> float:
    """Bytes per token one block keeps under torchtitan's op-level SAC: the odd-numbered
    matmul outputs in forward order (wq, wv, w1, w2 for a Llama block), the attention
    output and the block input."""
    outs = [m.shape[1] for m in block_modules(arch)]
    return b * (sum(outs[0::2]) + arch.q_dim + arch.hidden_size)


# torchtitan's train step drops the model's logits before backward (train.py: `del
# pred` "need to free to before bwd to avoid peaking memory"); the other stacks keep
# them in the output they return until the step ends.
FREES_LOGITS_BEFORE_BACKWARD = frozenset({"torchtitan"})


def loss_logits_bytes(arch: Architecture, seq: int, batch: int, precision: str,
                      loss: str = "full", keeps_logits: bool = True) -> float:
    """full: logits in the compute dtype + fp32 copy + fp32 log-softmax/gradient.
    chunked (torchtune CEWithChunkedOutputLoss, litgpt chunked_cross_entropy): the
    16-bit logits whole, the fp32 copies one chunk of LOSS_CHUNKS at a time.
    fused (Liger's fused linear cross entropy, Unsloth): the logits are never whole;
    one chunk of tokens at a time with as many tokens as hidden/vocab of them, i.e. a
    hidden-sized fp32 buffer per token for the gradient of the hidden states.
    ``keeps_logits`` False: the 16-bit logits are freed before backward, so the peak is
    the larger of the forward's end (16-bit logits, fp32 copy, log-softmax) and the
    backward's start (the fp32 tensors alone)."""
    b = compute_bytes(precision)
    fp32 = LOSS_FP32_COPIES if b < 4 else LOSS_FP32_COPIES - 1
    tokens = seq * batch
    if loss == "chunked":
        return tokens * arch.vocab_size * (b + 4 * fp32 / LOSS_CHUNKS)
    if loss == "fused":
        return tokens * arch.hidden_size * 4 * 2
    if not keeps_logits:
        return tokens * arch.vocab_size * max(b + 4 * (fp32 - 1), 4 * fp32)
    return tokens * arch.vocab_size * (b + 4 * fp32)
