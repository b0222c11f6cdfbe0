"""The optimizer step and CPU offload's host traffic: time a training step spends outside
the forward/backward matmuls that the MFU curve measures. Pure.

The optimizer step streams every trainable parameter's gradient, states and weights
through memory once per step (more often when its kernels are not fused), on the GPU or,
with CPU offload, on the host. Its cost per token is that over the tokens one GPU's step
holds (batch x sequence), so it weighs most at a small micro-batch and least where
ZeRO / FSDP shard it over many GPUs. CPU offload also moves gradients to the host and
(offloaded parameters) the parameters back to the GPU through the host link.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpuopt.jobs.estimate.memory.constants import (
    MASTER_WEIGHT_BYTES,
    MIXED_PRECISION_GRAD_BYTES,
    OPTIMIZER_BYTES,
    PURE_BF16_STATE_SCALE,
)
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.hardware import GpuSpec

# Achieved share of nominal DRAM bandwidth of kernels that stream tensors once: the
# PyTorch team's compiled Llama-2-7B decode (CUDA graphs, weights streamed once a token)
# reaches 72% of the A100-80GB's bandwidth (pytorch.org blog "Accelerating Generative AI
# with PyTorch II: GPT, Fast", 2023-11-30; the figure runtime.EAGER_HOST_S_PER_LAYER
# cites). Used for the host's DRAM and the PCIe link too, for want of a better figure.
STREAM_EFFICIENCY = 0.72
# Optimizer implementations that update every state in one pass (one read and one write
# of each tensor): DeepSpeed's FusedAdam (what a ZeRO config's "AdamW" builds on GPU,
# deepspeed/ops/adam/fused_adam.py), Megatron-Core / NeMo (Apex / TransformerEngine
# FusedAdam), torchtune (its configs set torch.optim.AdamW `fused: True`). Everything
# else runs torch.optim.AdamW's default, `foreach` (torch/optim/adamw.py: fused=None ->
# foreach on CUDA): one pass per _foreach op (FOREACH_ADAMW_PASSES).
FUSED_OPTIMIZER_FRAMEWORKS = frozenset({"deepspeed", "megatron", "nemo", "torchtune"})
# torch/optim/adam.py _multi_tensor_adam, per element: lerp_(m, g) reads m, g writes m;
# mul_(v); addcmul_(v, g, g); sqrt(v) -> t; div_(t); add_(t, eps); addcdiv_(p, m, t);
# decoupled weight decay mul_(p): 7 reads+writes of a moment (2 each) = 14 moment
# accesses, 2 of the gradient, 4 of the parameter.
FOREACH_MOMENT_ACCESSES = 14
FOREACH_GRAD_ACCESSES = 2
FOREACH_PARAM_ACCESSES = 4
# Host side of CPU offload. The host's memory bandwidth: a DGX A100 has 2 x AMD EPYC
# 7742, 8 channels of DDR4-3200 each (25.6 GB/s a channel: 204.8 GB/s a socket; NVIDIA
# DGX A100 User Guide, system specifications; AMD EPYC 7742 product page).
HOST_MEMORY_GBPS = 409.6
# Host link per GPU, one direction, GB/s: PCIe Gen3 x16 15.75, Gen4 31.5, Gen5 63 (PCI-SIG
# specifications); the generation each GPU's datasheet names (V100, T4: Gen3; A100, A10,
# A10G, L4, L40(S), RTX 30/40, RTX A6000 / 6000 Ada: Gen4; H100, H200, B200: Gen5).
PCIE_GBPS: Mapping[str, float] = MappingProxyType({
    "V100": 15.75, "T4": 15.75,
    "H100": 63.0, "H100-PCIe": 63.0, "H100-NVL": 63.0, "H200": 63.0, "B200": 63.0,
})
PCIE_GEN4_GBPS = 31.5


def host_link_gbps(gpu: GpuSpec) -> float:
    return PCIE_GBPS.get(gpu.name, PCIE_GEN4_GBPS)


def _per_param_bytes(workload: WorkloadSpec) -> tuple[float, float, float]:
    """(gradient, one state tensor's element, weight / master) bytes per trainable
    parameter, as memory/training.trainable_states holds them."""
    sixteen = workload.stored_precision in ("bf16", "fp16") or workload.method != "full"
    pure = sixteen and not workload.keeps_master_weights
    if workload.method == "full":
        grad = 2.0 if pure else (MIXED_PRECISION_GRAD_BYTES if sixteen else 4.0)
        weight = 2.0 if pure else float(MASTER_WEIGHT_BYTES)
    else:
        grad, weight = (2.0, 2.0) if pure else (4.0, 4.0)
    # Adafactor's factored second moment is a row and a column per matrix (Shazeer & Stern
    # 2018): no per-parameter state to stream
    states = OPTIMIZER_BYTES[workload.optimizer]
    if pure:
        states *= PURE_BF16_STATE_SCALE[workload.optimizer]
    return grad, states, weight


def step_bytes_per_param(workload: WorkloadSpec) -> float:
    """Bytes one optimizer step moves through memory per trainable parameter."""
    grad, states, weight = _per_param_bytes(workload)
    copy = 2.0 if weight == MASTER_WEIGHT_BYTES and workload.method == "full" else 0.0
    if (workload.optimizer == "adamw" and workload.offload == "none"
            and workload.framework not in FUSED_OPTIMIZER_FRAMEWORKS):
        moment = states / 2  # two moments
        return (FOREACH_MOMENT_ACCESSES * moment + FOREACH_GRAD_ACCESSES * grad
                + FOREACH_PARAM_ACCESSES * weight + copy)
    # one pass: read gradient, read + write states and weights (+ the 16-bit copy)
    return grad + 2 * states + 2 * weight + copy


def optimizer_seconds(workload: WorkloadSpec, gpu: GpuSpec, trainable: int, gpus: int,
                      nodes: int = 1) -> float:
    """One optimizer step's time: on each GPU over its shard (ZeRO >= 1 / FSDP shard the
    states over ``gpus``), or with CPU offload on the host, whose memory every GPU's
    shard on that node shares."""
    total = step_bytes_per_param(workload) * trainable
    if workload.offload in ("optimizer", "params"):
        return total / nodes / (HOST_MEMORY_GBPS * 1e9 * STREAM_EFFICIENCY)
    shards = gpus if (workload.zero_stage >= 1 or workload.fsdp) else 1
    return total / shards / (gpu.bandwidth_gbps * 1e9 * STREAM_EFFICIENCY)


def host_link_seconds(workload: WorkloadSpec, gpu: GpuSpec, trainable: int, params: int,
                      gpus: int) -> float:
    """Each GPU's host-link time a step under CPU offload: its gradient shard to the host
    and the updated shard back (optimizer offload); with offloaded parameters the shard
    is copied up for forward's all-gather and again for backward's (FSDP reshards after
    forward), and the gradient goes down."""
    if workload.offload not in ("optimizer", "params"):
        return 0.0
    grad, _, _ = _per_param_bytes(workload)
    shards = gpus if (workload.zero_stage >= 1 or workload.fsdp) else 1
    down = grad * trainable / shards
    up = (2 * 2.0 * params if workload.offload == "params" else 2.0 * trainable) / shards
    return (down + up) / (host_link_gbps(gpu) * 1e9 * STREAM_EFFICIENCY)
