"""Achieved utilisation (MFU) of fine-tuning: by model size, method, GPU and framework.

On the reference GPU the step runs at the size curve x flash-attention and framework
factors (reference_mfu), its time split into a tensor-core share and a memory-bound
share (memory_bound_share: Ivanov et al.'s 39%, none for Megatron-Core's fused stack).
On ``gpu`` (seconds_per_token) the tensor-core share runs the executed linear-layer
FLOPs at the workload's precision and attention's at 16-bit (flash attention's backward
recomputes; FlashAttention-2 on Hopper reaches a smaller share of peak), the memory-bound
share at the GPU's bandwidth; adapters enlarge the memory-bound share. MFU is the
model's FLOPs over that time at the precision's peak, capped at MFU_MAX. The size curve
and the method factors are measured on A100-80GB with the Hugging Face stack (the
reference). ``workload.mfu`` overrides all of it. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GPUS, GpuSpec

# Size curve, from public measurements (shared/data/throughput-calibration.md):
# - Megatron-LM pre-training reaches 41-48% MFU on A100/H100 at hidden sizes >= 8192;
#   7B-class fine-tuning with HF Trainer measures 21-26% (LLaMA-Factory / unsloth
#   README: 2,392-2,954 tokens/s on one A100 for Llama-2-7B LoRA). Utilisation grows
#   with matrix size, so MFU is interpolated in log2(hidden size) between SMALL and
#   LARGE.
MFU_LARGE = 0.45  # hidden >= 8192 (70B class)
MFU_SMALL = 0.25  # hidden <= 1024 (GPT-2 class): kernels too small to fill the GPU
MFU_7B = 0.38  # hidden 4096: 0.38 x 0.8 (LoRA) = 0.30 vs 0.26 measured with FA2
# LoRA/QLoRA: frozen-weight backward skips weight gradients but keeps the same kernel
# launches and adapter matmuls that are too thin to be efficient (LoRA 2,954 tok/s ->
# 26% MFU at 4 x params vs ~33% for full fine-tunes of the same model).
MFU_ADAPTER_FACTOR = 0.8
# ...a cost that is memory-bound: an adapter's matmuls have inner dimension r (8-64), so
# they move about as many bytes as they compute FLOPs, far below any GPU's ridge point;
# with its dropout and add they are extra passes over the activations. So the 0.8 on the
# reference is put into the memory-bound share (which it enlarges by this factor), where
# it scales with the GPU's bandwidth and shrinks with the stack's memory-bound share.
# Checked, not fitted: NeMo measures its LoRA runs at the model TFLOP/s of its full
# fine-tunes (673 vs 682 for Llama-2-7B; docs/source/performance/performance_summary.md).
# Without flash attention the same run measured 2,392 vs 2,954 tokens/s: x0.81.
NO_FLASH_FACTOR = 0.8
MFU_MAX = 0.75
# Attention backward over forward FLOPs: flash attention recomputes QK^T (and P) in
# backward, 5 matmuls to the forward's 2: 2.5x (Dao-AILab/flash-attention,
# benchmarks/benchmark_flash_attention.py, flops(): bwd = 2.5 x fwd); the eager path
# keeps P and runs 4: 2x.
FLASH_BACKWARD = 2.5
EAGER_ATTENTION_BACKWARD = 2.0
# FlashAttention-2 reaches 50-73% of the A100's peak (Dao 2023, arXiv 2307.08691,
# abstract) but 35% of the H100's (Shah et al. 2024, FlashAttention-3, arXiv
# 2407.08608, abstract: "FlashAttention-2 achieving only 35% utilization on H100"): it
# does not use Hopper's wgmma / TMA. Relative to the reference: 0.35 / 0.615 (the A100
# range's middle). PyTorch SDPA's flash backend is FlashAttention-2.
FA2_HOPPER_RELATIVE = 0.35 / 0.615
HOPPER = frozenset({"H100", "H100-PCIe", "H100-NVL", "H200"})
# Megatron-Core and NeMo (FUSED_STACKS) run attention through TransformerEngine's
# DotProductAttention, which on sm90 drops FlashAttention-2 for cuDNN's fused attention
# (F16_arbitrary_seqlen) "for performance reasons" when both can run: NVIDIA/
# TransformerEngine transformer_engine/pytorch/attention.py since v1.2 (32db39288c62,
# "Integrate cuDNN frontend v1 to fused attention"), the same at v1.8 (3ec998e96c82) and
# v1.9, what NeMo 24.07's container runs. On H100, cuDNN's BF16 attention at head dim 128
# runs ~1.6x FlashAttention-2's TFLOPS/s over sequences of 1k-16k, forward and backward:
# Shah et al. 2024 (FlashAttention-3, arXiv 2407.08608), Figs. 5-6: forward causal
# 410-539 vs 260-335 (x1.58-1.62), forward non-causal 574-617 vs 350-370 (x1.61-1.70),
# backward 408-518 vs 260-322 (x1.57-1.63).
CUDNN_OVER_FA2_HOPPER = 1.6

# The GPU the size curve was measured on.
REFERENCE_GPU = "A100-80GB"
# Share of a training step's time spent in memory-bound kernels (normalisation,
# element-wise, softmax/dropout, optimizer) on the reference: Ivanov et al. 2021, "Data
# Movement Is All You Need" (MLSys): tensor contractions are 99.8% of a transformer's
# FLOPs but 61% of its PyTorch runtime; the other 39% is bandwidth-bound. On another GPU
# the matmul part scales with its dense TFLOPS and the rest with its memory bandwidth,
# so a GPU whose FLOPs outgrew its bandwidth (H100: 3.2x the A100's TFLOPS, 1.6x its
# bandwidth; L4: 1.7x the A10G's TFLOPS, half its bandwidth) reaches a lower MFU.
# Checked against llm-foundry's published MFU of the same FSDP recipes on 8x H100 and
# 8x A100-80GB (scripts/train/benchmarking/README.md: 7B 46.4 vs 64.2%, 13B 41.6 vs
# 57.6%, 30B 38.1 vs 55.3%), i.e. H100 2.1-2.3x faster; this model gives 2.33x.
MEMORY_BOUND_SHARE = 0.39
# Megatron-LM / Megatron-Core (megatron, nemo): the same stack reaches 44% MFU on A100
# (GPT-3 175B, 1,024 GPUs) and 41-48% on H100 (GPT 2B-462B, 96-6,144 GPUs; Megatron-LM
# README): its MFU does not fall on a GPU whose FLOPs outgrew its bandwidth, i.e. its
# step is tensor-core bound. TransformerEngine and Megatron-Core fuse what is
# memory-bound elsewhere: layer norm with the FP8 cast of its output (te.LayerNormLinear /
# LayerNormMLP), cast + transpose in one kernel, bias + SwiGLU/GeLU, RoPE, softmax inside
# the fused attention, and the cross-entropy (megatron/core/fusions/). With the H100
# figure spanning 0.93-1.09x the A100 one, no memory-bound share is resolvable: 0.
FUSED_MEMORY_BOUND_SHARE = 0.0
FUSED_STACKS = frozenset({"megatron", "nemo"})
# LoRA's 0.8 (MFU_ADAPTER_FACTOR) as a larger memory-bound share on the reference.
ADAPTER_MEMORY_FACTOR = 1.0 + (1.0 / MFU_ADAPTER_FACTOR - 1.0) / MEMORY_BOUND_SHARE

# Framework classes: MFU relative to the Hugging Face Trainer stack the size curve was
# measured with.
# - hf, deepspeed: HF Trainer (with or without DeepSpeed ZeRO: the same model code and
#   kernels; ZeRO's communication is modelled separately as scaling efficiency).
# - litgpt: native PyTorch recipes (Fabric FSDP, SDPA flash attention); no throughput
#   of it is in the corpus and no same-setup comparison with HF was found: counted as HF.
# - llm-foundry: MosaicML's tuned stack (fused kernels, FSDP): 54.8% MFU for 7B at
#   seq 4096 and 57.6% for 13B on 8x A100-80GB with activation checkpointing
#   (llm-foundry benchmarking README) vs 0.38-0.40 of the HF size curve: x1.4.
# - megatron, nemo: Megatron-LM / Megatron-Core (NeMo runs on it): x1.0. MFU_LARGE
#   above *is* Megatron-LM's figure (GPT-3 175B on 1,024 A100s: 138 TFLOP/s per GPU, 44%
#   MFU; Megatron-LM README), so a factor over it would count Megatron twice; the same
#   stack keeps that MFU on H100 (41-48%, same README), which FUSED_MEMORY_BOUND_SHARE
#   carries, not this factor.
# - torchtune, torchtitan: PyTorch's own training stacks: FSDP2, SDPA flash attention,
#   torch.compile (torchtune's README measures its speeds with compile on; torchtitan's
#   benchmarks too), their own model code instead of Transformers' eager modules: the
#   class of llm-foundry's tuned stack above, x1.4 (its factor, from llm-foundry's
#   published MFU, not from torchtune's or torchtitan's rows, which are scored held out
#   against it: docs/estimates.md).
# - unsloth: starts from HF's curve.
#   What each really reaches is fitted from the measurement corpus (correction.py),
#   scored out of sample (docs/estimates.md).
FRAMEWORK_FACTOR: Mapping[str, float] = MappingProxyType({
    "hf": 1.0, "deepspeed": 1.0, "torchtune": 1.4, "litgpt": 1.0, "torchtitan": 1.4,
    "unsloth": 1.0, "llm-foundry": 1.4, "megatron": 1.0, "nemo": 1.0,
})


def _flops_per_byte(gpu: GpuSpec, precision: str) -> float:
    return gpu.tflops_for(precision) * 1e12 / (gpu.bandwidth_gbps * 1e9)


def memory_bound_share(framework: str) -> float:
    return FUSED_MEMORY_BOUND_SHARE if framework in FUSED_STACKS else MEMORY_BOUND_SHARE


def gpu_factor(gpu: GpuSpec, precision: str, share: float = MEMORY_BOUND_SHARE) -> float:
    """MFU on ``gpu`` relative to the reference GPU (1.0 there), every matmul at
    ``precision``; ``share``: the memory-bound share of the step on the reference."""
    ref = GPUS[REFERENCE_GPU]
    rho = _flops_per_byte(gpu, precision) / _flops_per_byte(ref, precision)
    return 1.0 / ((1.0 - share) + share * rho)


def size_mfu(arch: Architecture) -> float:
    """The reference MFU of a full fine-tune of this model size (HF stack, A100)."""
    x = math.log2(max(arch.hidden_size, 1))
    if x <= 12:  # up to 4096: SMALL (1024) .. 7B (4096)
        return MFU_SMALL + (MFU_7B - MFU_SMALL) * max(0.0, x - 10) / 2
    return MFU_7B + (MFU_LARGE - MFU_7B) * min(1.0, x - 12)  # 4096 .. 8192 and beyond


def attention_forward_flops(arch: Architecture, workload: WorkloadSpec) -> float:
    """QK^T and AV of one token's forward: 2 x 2 x layers x seq x q_dim, halved by the
    causal mask (flash attention skips the masked blocks)."""
    return 2.0 * arch.layers * workload.sequence_length * arch.q_dim


def _recomputed_forwards(workload: WorkloadSpec) -> float:
    if workload.checkpointing == "full":
        return 1.0
    return 0.5 if workload.checkpointing == "selective" else 0.0  # every other block


def executed_flops(arch: Architecture, workload: WorkloadSpec) -> tuple[float, float]:
    """(linear-layer FLOPs, attention-matmul FLOPs) a token's step runs. Linear layers:
    2 x active params a pass; backward 2 passes with weight gradients, 1 without
    (frozen base). Attention has no weights: its backward computes dQ, dK, dV whatever
    the method, 2x its forward (4 matmuls to the forward's 2), and flash attention
    recomputes QK^T in backward: 2.5x (FLASH_BACKWARD). Recomputation adds forwards."""
    extra = _recomputed_forwards(workload)
    lin_passes = (3.0 if workload.method == "full" else 2.0) + extra
    attn_bwd = FLASH_BACKWARD if workload.flash_attention else EAGER_ATTENTION_BACKWARD
    return (2.0 * arch.active_params * lin_passes,
            attention_forward_flops(arch, workload) * (1.0 + attn_bwd + extra))


def attention_kernel_factor(gpu: GpuSpec, workload: WorkloadSpec) -> float:
    """Flash attention's share of peak on ``gpu`` relative to the reference GPU's: on
    Hopper, FlashAttention-2's, or cuDNN's fused attention under TransformerEngine
    (CUDNN_OVER_FA2_HOPPER)."""
    if workload.flash_attention and gpu.name in HOPPER:
        if workload.framework in FUSED_STACKS:
            return FA2_HOPPER_RELATIVE * CUDNN_OVER_FA2_HOPPER
        return FA2_HOPPER_RELATIVE
    return 1.0


def reference_mfu(arch: Architecture, workload: WorkloadSpec) -> float:
    """The size curve x flash-attention and framework factors: MFU on the reference GPU
    (adapters' cost: ADAPTER_MEMORY_FACTOR, in seconds_per_token)."""
    mfu = size_mfu(arch)
    if not workload.flash_attention:
        mfu *= NO_FLASH_FACTOR
    return mfu * FRAMEWORK_FACTOR[workload.framework]


def seconds_per_token(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec,
                      flops_per_token: float) -> float:
    """One GPU's compute time per token of a training step (communication and the
    optimizer step apart): on the reference, ``flops_per_token`` at the reference MFU,
    split into a tensor-core share and a memory-bound share (memory_bound_share); on
    ``gpu`` the first runs the executed linear FLOPs at the workload's precision and the
    attention FLOPs at 16-bit (fp8 training casts only the linear layers' GEMMs:
    TransformerEngine's te.Linear / LayerNormLinear / LayerNormMLP and torchao's
    Float8Linear replace linear modules; attention stays bf16 in both unless FP8 dot
    product attention is asked for - TE's NVTE_FP8_DPA, off by default), the second at
    the ratio of memory bandwidths."""
    ref = GPUS[REFERENCE_GPU]
    prec = workload.compute_precision
    m = reference_mfu(arch, workload)
    share = memory_bound_share(workload.framework)
    lin, attn = executed_flops(arch, workload)
    attn_prec = "bf16" if workload.fp8_training else prec
    tensor = (lin / (gpu.tflops_for(prec) * 1e12)
              + attn / (gpu.tflops_for(attn_prec) * 1e12
                        * attention_kernel_factor(gpu, workload)))
    memory = (flops_per_token / (ref.tflops_for(prec) * 1e12)
              * ref.bandwidth_gbps / gpu.bandwidth_gbps)
    if workload.method in ("lora", "qlora"):
        memory *= ADAPTER_MEMORY_FACTOR
    return ((1.0 - share) * tensor + share * memory) / m


def training_mfu(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec,
                 flops_per_token: float | None = None) -> float:
    """Model FLOPs utilisation of this fine-tune on ``gpu``: ``flops_per_token`` (the
    model's count, runtime.training_flops_per_token) over the GPU's peak at the
    workload's precision x seconds_per_token (capped at MFU_MAX)."""
    if workload.mfu is not None:
        return workload.mfu
    if flops_per_token is None:
        lin, _ = executed_flops(arch, workload)
        extra = _recomputed_forwards(workload)
        passes = (3.0 if workload.method == "full" else 2.0) + extra
        flops_per_token = lin + attention_forward_flops(arch, workload) * passes
    t = seconds_per_token(arch, workload, gpu, flops_per_token)
    mfu = flops_per_token / (gpu.tflops_for(workload.compute_precision) * 1e12 * t)
    return min(mfu, MFU_MAX)
