"""Achieved utilisation (MFU) of fine-tuning: by model size, method, GPU and framework.

    mfu = size curve x method factors x framework factor x GPU factor   (capped at MFU_MAX)

The size curve and the method factors are measured on A100-80GB with the Hugging Face
stack (the reference); the GPU factor carries them to other GPUs and the framework
factor to better-tuned training stacks. ``workload.mfu`` overrides all of it. Pure.
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
# Without flash attention the same run measured 2,392 vs 2,954 tokens/s: x0.81.
NO_FLASH_FACTOR = 0.8
MFU_MAX = 0.75

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

# Framework classes: MFU relative to the Hugging Face Trainer stack the size curve was
# measured with.
# - hf, deepspeed: HF Trainer (with or without DeepSpeed ZeRO: the same model code and
#   kernels; ZeRO's communication is modelled separately as scaling efficiency).
# - litgpt: native PyTorch recipes (Fabric FSDP, SDPA flash attention); no throughput
#   of it is in the corpus and no same-setup comparison with HF was found: counted as HF.
# - llm-foundry: MosaicML's tuned stack (fused kernels, FSDP): 54.8% MFU for 7B at
#   seq 4096 and 57.6% for 13B on 8x A100-80GB with activation checkpointing
#   (llm-foundry benchmarking README) vs 0.38-0.40 of the HF size curve: x1.4.
# - megatron: Megatron-LM / NeMo (tensor + pipeline parallel, fused kernels): 41-48% MFU
#   on H100 (Megatron-LM README), i.e. 56-65% A100-equivalent by the GPU factor above,
#   against 0.38-0.45 of the HF curve: x1.4.
# - torchtune, torchtitan: PyTorch's own training stacks: FSDP2, SDPA flash attention,
#   torch.compile (torchtune's README measures its speeds with compile on; torchtitan's
#   benchmarks too), their own model code instead of Transformers' eager modules: the
#   class of the two tuned stacks above, x1.4 (their factor, from llm-foundry's and
#   Megatron-LM's published MFU, not from torchtune's or torchtitan's rows, which are
#   scored held out against it: docs/estimates.md).
# - unsloth: starts from HF's curve; nemo: Megatron-Core underneath (x1.4).
#   What each really reaches is fitted from the measurement corpus (correction.py),
#   scored out of sample (docs/estimates.md).
FRAMEWORK_FACTOR: Mapping[str, float] = MappingProxyType({
    "hf": 1.0, "deepspeed": 1.0, "torchtune": 1.4, "litgpt": 1.0, "torchtitan": 1.4,
    "unsloth": 1.0, "llm-foundry": 1.4, "megatron": 1.4, "nemo": 1.4,
})


def _flops_per_byte(gpu: GpuSpec, precision: str) -> float:
    return gpu.tflops_for(precision) * 1e12 / (gpu.bandwidth_gbps * 1e9)


def gpu_factor(gpu: GpuSpec, precision: str) -> float:
    """MFU on ``gpu`` relative to the reference GPU (1.0 there)."""
    ref = GPUS[REFERENCE_GPU]
    rho = _flops_per_byte(gpu, precision) / _flops_per_byte(ref, precision)
    return 1.0 / ((1.0 - MEMORY_BOUND_SHARE) + MEMORY_BOUND_SHARE * rho)


def size_mfu(arch: Architecture) -> float:
    """The reference MFU of a full fine-tune of this model size (HF stack, A100)."""
    x = math.log2(max(arch.hidden_size, 1))
    if x <= 12:  # up to 4096: SMALL (1024) .. 7B (4096)
        return MFU_SMALL + (MFU_7B - MFU_SMALL) * max(0.0, x - 10) / 2
    return MFU_7B + (MFU_LARGE - MFU_7B) * min(1.0, x - 12)  # 4096 .. 8192 and beyond


def training_mfu(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec) -> float:
    """Model FLOPs utilisation of this fine-tune on ``gpu`` (see the constants above)."""
    if workload.mfu is not None:
        return workload.mfu
    mfu = size_mfu(arch)
    if workload.method in ("lora", "qlora"):
        mfu *= MFU_ADAPTER_FACTOR
    if not workload.flash_attention:
        mfu *= NO_FLASH_FACTOR
    mfu *= FRAMEWORK_FACTOR[workload.framework]
    mfu *= gpu_factor(gpu, workload.compute_precision)
    return min(mfu, MFU_MAX)
