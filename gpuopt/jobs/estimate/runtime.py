"""How long a job takes on a GPU configuration: a roofline model with measured efficiencies.

Fine-tuning is compute-bound: FLOPs per token (6 x params full, 4 x params with frozen
base weights, + 2 x params when activations are recomputed, + attention's own matmuls)
over dense TFLOPS at the workload's precision x GPUs x achieved utilisation (MFU) x
multi-GPU scaling efficiency. Scaling efficiency is computed from the bytes each step
must exchange (gradients for data parallel, parameters too for ZeRO-3 / FSDP) over the
GPU-to-GPU link from the hardware table, so PCIe and NVLink differ for a reason.

Batch inference is prefill (compute-bound, 2 x active params per prompt token) plus
decode (bound by memory bandwidth: every step reads the weights and the batch's KV
cache). The batch is as large as the memory left on the GPU allows, so a GPU with more
memory to spare decodes faster. Under tensor parallelism every forward pass also waits
on its all-reduces (two per layer: latency + ring traffic over the GPU link).

Every efficiency is an explicit, documented parameter (the MFU and scaling each
:class:`RuntimeEstimate` reports); a job can override MFU with ``workload.mfu``;
utilisation by GPU and framework lives in utilisation.py. Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from types import MappingProxyType

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate import correction, optimizer_step, parallel, step_passes
from gpuopt.jobs.estimate.calibration import (
    Calibration,
    calibrated_memory,
    record_for,
    throughput_adjustment,
    with_config,
)
from gpuopt.jobs.estimate.fit import Fit, Layout, check_fit, layouts
from gpuopt.jobs.estimate.fitted import COEFFICIENTS
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.memory.breakdown import MemoryEstimate
from gpuopt.jobs.estimate.memory.inference import (
    DEFAULT_STEP_TOKENS,
    KV_BYTES,
    mean_kv_layer_tokens,
)
from gpuopt.jobs.estimate.memory.training import lora_params
from gpuopt.jobs.estimate.memory.weights import QUANTIZED, compute_bytes
from gpuopt.jobs.estimate.utilisation import training_mfu
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.providers.fabrics import Fabric
from gpuopt.providers.hardware import GpuSpec

# Achieved utilisation of fine-tuning (by model size, method, GPU and framework):
# jobs/estimate/utilisation.py.
# Of communication, the part that overlaps with compute (DDP bucketed all-reduce and
# ZeRO-3 prefetch overlap roughly half in practice; PyTorch DDP paper, Li et al. 2020).
COMM_OVERLAP = 0.5
# Achieved fraction of the link's nominal bandwidth in NCCL ring collectives (nccl-tests
# bus bandwidth reaches ~75-85% of NVLink / PCIe nominal, one direction's: a ring sends
# and receives its bytes at once, so each direction carries them; link_one_way_gbps).
LINK_EFFICIENCY = 0.8
# DeepSpeed ZeRO-1 / -2 do not overlap their collectives with backward unless the config
# sets overlap_comm: its default is False for stages 1 and 2, True for stage 3 only
# (microsoft/DeepSpeed deepspeed/runtime/zero/constants.py at 02a63e433b89:
# ZERO_OPTIMIZATION_OVERLAP_COMM_DEFAULT = False, ZERO3_OPTIMIZATION_OVERLAP_COMM_DEFAULT
# = True). The gradients are reduced as each 5e8-element bucket fills
# (reduce_bucket_size) on the compute stream, and the updated 16-bit partitions are
# all-gathered after the optimizer step: nothing runs beside compute (comm_overlap).
DEEPSPEED_NO_OVERLAP_STAGES = frozenset({1, 2})
# HF Trainer's --fp16 / --bf16 without DeepSpeed is torch.cuda.amp: autocast casts the
# matmuls' inputs and the model's parameters stay fp32 (transformers 4.12's Trainer:
# its use_amp path, autocast() and torch.cuda.amp.GradScaler), so their
# gradients are fp32 and DistributedDataParallel all-reduces them as they are, 4 bytes a
# parameter (memory/constants.py MIXED_PRECISION_GRAD_BYTES holds them so); DeepSpeed's
# fp16 engine holds the model in fp16 and reduces 16-bit gradients.
GRAD_BYTES_AMP_DDP = 4.0

# Inference:
# - prefill runs large matmuls: ~50% MFU (vLLM / TensorRT-LLM prefill benchmarks);
# - decode reads weights + KV cache once per step at a fraction of peak bandwidth:
#   llama.cpp f16 batch 1 on A100-80GB reaches 73.8 tok/s = 49% of 2,039 GB/s; HF on
#   A10 29 tok/s = 65% of 600 GB/s; 4-bit kernels dequantize as they read (q4_0 on
#   A100: 25%; AWQ on T4: 41%).
PREFILL_MFU = 0.5
DECODE_BW_EFFICIENCY_16BIT = 0.6
DECODE_BW_EFFICIENCY_QUANT = 0.35
DECODE_COMPUTE_MFU = 0.5  # large batches turn decode compute-bound
# Engines that schedule prompt tokens into the same forward pass as the running batch's
# decode tokens: vLLM (V1 engine, chunked prefill always on: "In vLLM V1, chunked
# prefill is always enabled by default", docs/configuration/optimization.md) and
# TensorRT-LLM (in-flight batching with context chunking, the default of trtllm-bench:
# docs/source/advanced/gpt-attention.md, "In-flight Batching"). SGLang runs a prefill
# batch apart from decode unless --enable-mixed-chunk is set (server_args.py,
# enable_mixed_chunk = False), and Transformers' generate prefills then decodes.
PREFILL_IN_DECODE_STEPS = frozenset({"vllm", "tensorrt-llm"})
# ...and the tokens such a step carries, prompt chunk and decode tokens together:
# trtllm-bench builds max_num_tokens as the batch x (1 + input/output length), at least
# 2048 ("Set min to 2048 to ensure Ctx/Gen overlap efficiency") and at most 32768
# (NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py, finetune_setting, at
# 04cba882084a; 0.17's perf-overview prints "Max Runtime Tokens: 8192" for a 128/128
# run at batch 4,096, the same rule), with context chunking on (tensorrt_llm/bench/run/
# dataclasses.py at 4c224fdc8bf3, ExecutorSettingsConfig.chunking = True). vLLM: the
# memory model's step budget (memory/inference.py DEFAULT_STEP_TOKENS); a job's
# max_batched_tokens overrides both.
TRTLLM_BENCH_MIN_TOKENS = 2048
TRTLLM_BENCH_MAX_TOKENS = 32768
# Tensor parallelism (Megatron's layout, Shoeybi et al. 2019, sec. 3): every forward
# pass all-reduces each layer's activations twice (after attention, after the MLP),
# hidden_size 16-bit values a token, and the next layer waits for them: the time adds
# to the pass, it is not hidden under its matmuls or weight reads. Each all-reduce costs
# - a latency: the custom all-reduce kernels the serving engines run in decode take
#   9.1-10.1 us for a small message on H100 at TP 2/4/8 (vLLM's kernel; TensorRT-LLM's
#   3.7-5.9 us), sgl-project/sglang pull request 2904 (2025-01-15); over PCIe, NCCL's
#   smallest all-reduce among 8 RTX 4090s takes 42.6 us (NVIDIA/nccl issue 1530);
# - the bytes a ring moves, 2 (tp-1)/tp of the payload through each GPU's link in each
#   direction at once, so at one direction's bandwidth: the hardware table's NVLink
#   figures are the datasheets' two-direction totals (A100 12 links x 25 GB/s each way
#   = 600, H100 18 x 25 = 900; open-mpi/hwloc issue 574), its PCIe figures one
#   direction's. Achieved: nccl-tests all_reduce_perf busbw on 8x A100-SXM4-80GB is
#   ~200 GB/s of the 300 each way (NVIDIA/nccl-tests issue 149; 208 GB/s in issue 178).
#   NCCL's maintainer gives 370 of H100's 450 at large sizes "with the protocol overhead
#   (~20%)", and 256 MB "is too small to reach peak bandwidth" (nccl-tests issue 212);
#   decode's all-reduces are 0.1-40 MB, so the lower, measured share is used.
TP_LINK_EFFICIENCY = 200 / 300
TP_ALLREDUCE_LATENCY_S: Mapping[str, float] = MappingProxyType(
    {"nvlink": 10e-6, "pcie": 40e-6})
# ...and where the all-reduce is measured by message size, that curve: at decode's 1-20
# MB messages NCCL runs well below its large-message bus bandwidth (it reaches 36 GB/s
# at 1 MB, 90 at 8 MB, 167 at 64 MB, 231 at 8 GB). nccl-tests all_reduce_perf, in-place
# busbw on 8x A100-SXM4-80GB (NVSwitch; Azure ND A100 v4, NCCL 2.18.5):
# Azure/AI-benchmarking-guide Azure_Results/ND_A100_v4_results.md at 3bb66cacc256,
# "NCCL Bandwidth" (its sizes are powers of two, 1M = 2^20 bytes). A pass's all-reduce
# takes at least that measured time (busbw = 2 (n-1)/n x size / time, as nccl-tests
# defines it) for a message of the pass's mean size. The table is of NCCL; the engines'
# own one-/two-shot kernels take some sizes instead, and no per-size measurement of
# theirs on A100 was found: NCCL's curve stands in for them. Measured on 8 GPUs; busbw
# normalises the ring's traffic for the member count, so it serves TP 2-8 alike.
_MIB = 2 ** 20
ALLREDUCE_BUSBW_BY_SIZE: Mapping[str, tuple[tuple[float, float], ...]] = MappingProxyType({
    name: ((_MIB, 36.22), (2 * _MIB, 53.54), (4 * _MIB, 71.43), (8 * _MIB, 89.99),
           (16 * _MIB, 109.22), (32 * _MIB, 132.77), (64 * _MIB, 166.63),
           (128 * _MIB, 174.18), (256 * _MIB, 213.87), (512 * _MIB, 221.58),
           (1024 * _MIB, 228.10), (2048 * _MIB, 230.22), (4096 * _MIB, 230.48),
           (8192 * _MIB, 231.58))
    for name in ("A100-80GB", "A100-40GB")})
DEQUANT_ON_READ = frozenset(QUANTIZED) - {"fp8"}
# bitsandbytes' formats, as transformers' and litgpt's generate run them
BNB_DEQUANT_TO_16BIT = frozenset({"nf4", "int4", "int8"})
# ...except bitsandbytes' 4-bit formats with one token per matmul (decode at batch 1):
# matmul_4bit sends an input with A.numel() == A.shape[-1] (and no grad) to the
# gemv_4bit kernel, which reads the packed 4-bit weights directly; larger inputs take
# MatMul4Bit (dequantize_4bit, then a 16-bit matmul). bitsandbytes/autograd/_functions.py.
BNB_GEMV_AT_BATCH_1 = frozenset({"nf4", "int4"})
# An eager PyTorch decode loop (Transformers' / litgpt's generate without torch.compile)
# is bound by the host launching its kernels, not by the GPU, at small batches: the
# PyTorch team's plain Llama-2-7B decode on an A100-80GB ran 25.5 tok/s, "heavily CPU
# overhead bound" (the same model compiled with CUDA graphs: 107 tok/s, 72% of the
# memory bandwidth), pytorch.org blog "Accelerating Generative AI with PyTorch II: GPT,
# Fast" (2023-11-30; pytorch.github.io _posts/2023-11-30-accelerating-generative-ai-2.md).
# The host's time per decode step grows with the layers it launches: 1/25.5 s over
# Llama-2-7B's 32 layers a layer. A step takes at least that (hf engine only: the
# serving engines replay CUDA graphs).
EAGER_HOST_S_PER_LAYER = 1 / 25.5 / 32


@dataclass(frozen=True, slots=True)
class RuntimeEstimate:
    hours: float
    tokens_per_second: float  # training tokens/s, or output tokens/s for inference
    mfu: float
    scaling: float
    batch: int | None = None  # inference: sequences decoded together (per replica)
    layout: str = ""  # how the GPUs are used: "FSDP x8", "TP4", "2 x TP4", ...
    source: str = "model"  # or "measured (N runs)" (jobs/estimate/calibration.py)
    kind: str = "finetune"  # or "inference"


def hours_interval(kind: str) -> tuple[float, float]:
    """Factors on estimated hours for the p10 and p90 of what runs like it take: the
    held-out estimate/measured throughput ratios of the corpus (fitted.RATIO_INTERVALS;
    real hours = estimated hours x that ratio)."""
    from gpuopt.jobs.estimate.fitted import RATIO_INTERVALS

    return RATIO_INTERVALS.get(kind, (1.0, 1.0))


def training_flops_per_token(arch: Architecture, workload: WorkloadSpec) -> float:
    """Forward + backward FLOPs per token (Kaplan et al. 2020; Narayanan et al. 2021).

    A forward pass costs 2 x active params per token plus attention's QK^T and AV
    matmuls (2 x 2 x layers x seq x q_dim, halved by the causal mask). Backward costs 2x
    forward with weight gradients, 1x without (frozen weights: LoRA/QLoRA).
    Recomputation (gradient checkpointing) adds one forward.
    """
    forward = 2 * arch.active_params + 2 * arch.layers * workload.sequence_length * arch.q_dim
    passes = 3.0 if workload.method == "full" else 2.0
    if workload.checkpointing == "full":
        passes += 1.0
    elif workload.checkpointing == "selective":
        passes += 0.5  # every other block recomputed
    return forward * passes


def trainable_params(arch: Architecture, workload: WorkloadSpec) -> int:
    """Parameters with gradients: all (full), or the adapters' r x (in + out) per target."""
    if workload.method == "full":
        return arch.params
    return lora_params(arch, workload.lora_targets, workload.lora_rank)


def _comm_payload(arch: Architecture, workload: WorkloadSpec,
                  trainable: int | None = None) -> tuple[float, float]:
    """(bytes a step's collectives move, ring factor): a ring collective over k members
    sends ``factor x (k-1)/k x payload`` bytes through each member's link."""
    if trainable is None:
        trainable = trainable_params(arch, workload)
    # HF Trainer's 16-bit training without DeepSpeed reduces fp32 gradients
    grad_bytes = GRAD_BYTES_AMP_DDP if step_passes.amp_fp32_params(workload) else 2.0
    grad_bytes *= trainable
    if workload.method == "full" and (workload.zero_stage == 3 or workload.fsdp):
        # reduce-scatter the gradients once per optimizer step; all-gather the 16-bit
        # parameters in forward and again in backward of every micro-batch (ZeRO-3 /
        # FSDP FULL_SHARD reshard after forward)
        gathers = 2 * 2.0 * arch.params * workload.gradient_accumulation
        return grad_bytes + gathers, 1.0
    return grad_bytes, 2.0  # ring all-reduce = reduce-scatter + all-gather


def _comm_bytes_per_gpu_step(arch: Architecture, workload: WorkloadSpec, gpus: int,
                             trainable: int | None = None) -> float:
    """Bytes each GPU sends per optimizer step inside one node (ring collectives) among
    the ``gpus`` that hold the same part of the model (its share: parallel.param_share)."""
    if gpus <= 1:
        return 0.0
    payload, factor = _comm_payload(arch, workload, trainable)
    return factor * (gpus - 1) / gpus * payload * parallel.param_share(arch, workload)


def link_one_way_gbps(gpu: GpuSpec) -> float:
    """One direction's bandwidth of a GPU's link (the hardware table's NVLink figures are
    two-direction totals, its PCIe figures one direction's: TP_ALLREDUCE_LATENCY_S)."""
    return gpu.link_gbps / 2 if gpu.interconnect == "nvlink" else gpu.link_gbps


def comm_seconds(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
                 nodes: int = 1, fabric: Fabric | None = None,
                 trainable: int | None = None) -> float:
    """One step's collectives over ``gpus`` GPUs spread evenly over ``nodes`` nodes,
    hierarchical as NCCL runs them: inside each node over the GPUs' own link, then
    between the nodes, each GPU carrying its 1/per-node share of the payload over its
    share of the node's fabric (so the node's fabric moves ``factor x (N-1)/N x
    payload``), then inside the node again (counted in the first term's factor)."""
    per_node = gpus // nodes
    intra = _comm_bytes_per_gpu_step(arch, workload, parallel.shard_group(workload, per_node),
                                     trainable) / (link_one_way_gbps(gpu) * 1e9 * LINK_EFFICIENCY)
    if nodes <= 1:
        return intra
    if fabric is None:
        raise ValueError("a multi-node estimate needs the instances' fabric")
    payload, factor = _comm_payload(arch, workload, trainable)
    # a copy of the model spans ceil(split / per_node) nodes; the node's fabric carries
    # the part of it the node holds, among the nodes holding the same part
    split = workload.tensor_parallel * workload.pipeline_parallel  # ranks of one model copy
    peers = nodes // -(-split // per_node)
    if peers <= 1:
        return intra
    held = min(1.0, per_node / split)
    inter = factor * (peers - 1) / peers * payload * held / (
        fabric.bytes_per_s * LINK_EFFICIENCY)
    return intra + inter


def comm_overlap(workload: WorkloadSpec) -> float:
    """The share of a step's collectives hidden under compute (COMM_OVERLAP), none for
    DeepSpeed ZeRO-1/2 (DEEPSPEED_NO_OVERLAP_STAGES)."""
    if (workload.framework == "deepspeed"
            and workload.zero_stage in DEEPSPEED_NO_OVERLAP_STAGES):
        return 0.0
    return COMM_OVERLAP


def scaling_efficiency(
    arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int, mfu: float,
    trainable: int | None = None, flops_per_token: float | None = None,
    nodes: int = 1, fabric: Fabric | None = None,
) -> float:
    """compute / (compute + exposed communication) for one optimizer step; ``gpus`` is
    the total over ``nodes`` nodes joined by ``fabric``."""
    if gpus <= 1:
        return 1.0
    if flops_per_token is None:
        flops_per_token = training_flops_per_token(arch, workload)
    compute_s = (
        flops_per_token
        * step_tokens(workload, gpus)
        / (gpu.tflops_for(workload.compute_precision) * 1e12 * mfu * gpus)
    )
    # data parallel (once per optimizer step) and ring attention (every micro-batch),
    # overlapped with compute; tensor-parallel collectives and stage sends on the
    # critical path of every micro-batch, which the pipeline's bubble stretches
    m = workload.gradient_accumulation
    comm_s = comm_seconds(arch, workload, gpu, gpus, nodes, fabric, trainable)
    comm_s += m * parallel.cp_ring_seconds(arch, workload, gpu)
    serial_s = m * (parallel.tp_seconds(arch, workload, gpu)
                    + parallel.pp_p2p_seconds(arch, workload, gpu))
    busy_s = (compute_s + serial_s) / (1 - parallel.bubble_fraction(workload))
    overlap = comm_overlap(workload)
    exposed = max(0.0, comm_s - overlap * compute_s) if comm_s > 0 else 0.0
    exposed = max(exposed, (1 - overlap) * comm_s)
    return compute_s / (busy_s + exposed)


def step_tokens(workload: WorkloadSpec, gpus: int) -> int:
    """Tokens of one optimizer step over ``gpus``: a micro-batch of ``batch_size``
    sequences per data-parallel replica, ``gradient_accumulation`` times."""
    return (workload.batch_size * workload.sequence_length
            * parallel.replicas(workload, gpus) * workload.gradient_accumulation)


def training_runtime(
    arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
    trainable: int | None = None, layout: str = "", flops_per_token: float | None = None,
    coefficients: Mapping[str, float] | None = None,
    nodes: int = 1, fabric: Fabric | None = None,
) -> RuntimeEstimate:
    """``trainable`` and ``flops_per_token`` are the job's own figures (computed here
    when not given; a planner computes them once per job). ``gpus`` is the total over
    ``nodes`` nodes joined by ``fabric``."""
    tokens = workload.total_tokens
    if tokens is None:
        raise ValueError("fine-tuning needs workload.tokens or epochs x dataset_tokens")
    if gpus % workload.model_parallel:
        raise ValueError(f"{gpus} GPUs: a multiple of tensor x pipeline x context parallel "
                         f"({workload.model_parallel}) is needed")
    if flops_per_token is None:
        flops_per_token = training_flops_per_token(arch, workload)
    mfu = training_mfu(arch, workload, gpu, flops_per_token)
    scaling = scaling_efficiency(arch, workload, gpu, gpus, mfu, trainable, flops_per_token,
                                 nodes, fabric)
    flops_per_s = gpu.tflops_for(workload.compute_precision) * 1e12 * gpus * mfu * scaling
    tps = flops_per_s / flops_per_token
    if trainable is None:
        trainable = trainable_params(arch, workload)
    tps *= step_share(arch, workload, gpu, gpus, trainable, tps, nodes)
    tps *= correction.factor(
        correction.features(workload), COEFFICIENTS if coefficients is None else coefficients)
    return RuntimeEstimate(hours=tokens / tps / 3600, tokens_per_second=tps, mfu=mfu,
                           scaling=scaling, layout=layout)


def step_share(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
               trainable: int, tps: float, nodes: int = 1) -> float:
    """The share of a step's time that forward, backward and their collectives take
    (1.0 when nothing else runs): the optimizer step (optimizer_step.optimizer_seconds,
    not overlapped: it runs after the last gradient), the stack's own passes over
    parameters, gradients and widened activations (step_passes.pass_seconds, in series
    with compute) and CPU offload's host-link copies (host_link_seconds, overlapped with
    compute as collectives are, COMM_OVERLAP)."""
    step_s = step_tokens(workload, gpus) / tps
    # each GPU steps its share of the model, sharded over the ranks that hold that share
    share = parallel.param_share(arch, workload)
    held, group = round(trainable * share), parallel.shard_group(workload, gpus)
    opt_s = optimizer_step.optimizer_seconds(workload, gpu, held, group, nodes)
    opt_s += step_passes.pass_seconds(arch, workload, gpu, group, held)
    host_s = optimizer_step.host_link_seconds(workload, gpu, held, round(arch.params * share),
                                              group)
    exposed = max(host_s - COMM_OVERLAP * step_s, (1 - COMM_OVERLAP) * host_s)
    return step_s / (step_s + opt_s + exposed)


def tp_link_bytes_per_s(gpu: GpuSpec) -> float:
    """A ring all-reduce's achieved rate through each GPU's link, one direction
    (TP_ALLREDUCE_LATENCY_S's note)."""
    one_way = gpu.link_gbps / 2 if gpu.interconnect == "nvlink" else gpu.link_gbps
    return one_way * 1e9 * TP_LINK_EFFICIENCY


def measured_busbw_gbps(gpu: GpuSpec, message_bytes: float) -> float | None:
    """NCCL all-reduce bus bandwidth at ``message_bytes`` on ``gpu``'s NVLink where a
    per-size measurement exists (ALLREDUCE_BUSBW_BY_SIZE), interpolated in log2(size)
    and held at the table's ends; None elsewhere."""
    table = ALLREDUCE_BUSBW_BY_SIZE.get(gpu.name)
    if not table:
        return None
    if message_bytes <= table[0][0]:
        return table[0][1]
    for (s0, b0), (s1, b1) in pairwise(table):
        if message_bytes <= s1:
            f = math.log2(message_bytes / s0) / math.log2(s1 / s0)
            return b0 + f * (b1 - b0)
    return table[-1][1]


def tp_allreduce_seconds(arch: Architecture, gpu: GpuSpec, tp: int, tokens: float,
                         passes: float) -> float:
    """Time the tensor-parallel all-reduces of ``passes`` forward passes carrying
    ``tokens`` tokens in all take: two per layer per pass, each its latency plus its
    ring traffic (16-bit, hidden_size values a token), or, on a GPU whose all-reduce is
    measured by message size (ALLREDUCE_BUSBW_BY_SIZE), at least the measured time of a
    message of the pass's mean size; 0 on one GPU."""
    if tp <= 1:
        return 0.0
    count = passes * arch.layers * 2
    latency = count * TP_ALLREDUCE_LATENCY_S.get(
        gpu.interconnect, TP_ALLREDUCE_LATENCY_S["pcie"])
    payload = tokens * arch.layers * 2 * arch.hidden_size * 2.0
    ring = 2 * (tp - 1) / tp * payload
    modelled = latency + ring / tp_link_bytes_per_s(gpu)
    busbw = measured_busbw_gbps(gpu, payload / count) if count > 0 else None
    return modelled if busbw is None else max(modelled, ring / (busbw * 1e9))


def step_token_budget(workload: WorkloadSpec, batch: int) -> float:
    """Tokens one mixed step carries (prompt chunk + decode tokens): the job's
    max_batched_tokens, else the engine's (TRTLLM_BENCH_MIN_TOKENS' note)."""
    if workload.max_batched_tokens:
        return float(workload.max_batched_tokens)
    if workload.engine == "tensorrt-llm":
        ratio = workload.prompt_len / max(1, workload.output_len)
        return min(float(TRTLLM_BENCH_MAX_TOKENS),
                   max(float(TRTLLM_BENCH_MIN_TOKENS), batch * (1 + ratio)))
    return float(DEFAULT_STEP_TOKENS)


def mixed_steps_seconds(prefill_s: float, prompt_tokens: float, steps: int, batch: int,
                        step_memory_s: float, step_compute_s: float, budget: float) -> float:
    """Decode steps that carry the prompts in chunks (chunked prefill / in-flight
    batching). A step reads the weights once for its decode tokens and its prompt chunk
    (at most ``budget`` - ``batch`` tokens), so a chunk's compute hides in the step's
    memory-bound slack (memory - decode compute), up to the chunk's own compute; the
    rest of the prompts' compute adds. Small chunks hide all they can: max(memory total,
    compute total); budget-sized chunks far above the slack hide one step's slack each."""
    decode_s = steps * max(step_memory_s, step_compute_s)
    if prompt_tokens <= 0 or prefill_s <= 0:
        return decode_s
    chunks = max(1.0, prompt_tokens / max(1.0, budget - batch))
    chunk_s = prefill_s / chunks
    slack = max(0.0, step_memory_s - step_compute_s)
    return decode_s + prefill_s - min(float(steps), chunks) * min(chunk_s, slack)


@dataclass(frozen=True, slots=True)
class InferenceMemory:
    """What the inference runtime needs from the memory model, per GPU."""

    weight_bytes: float  # weights each GPU reads per decode step
    # KV cache one sequence's decode step reads, per GPU, averaged over its output tokens
    # (sliding-window layers read at most their window: inference.mean_kv_layer_tokens)
    kv_bytes_per_sequence: float
    max_batch: int  # sequences the engine runs at once (effective concurrency)


def inference_runtime(
    arch: Architecture,
    workload: WorkloadSpec,
    gpu: GpuSpec,
    gpus: int,
    memory: InferenceMemory,
    replicas: int = 1,
    layout: str = "",
    coefficients: Mapping[str, float] | None = None,
) -> RuntimeEstimate:
    """``replicas`` independent engines, each tensor parallel over ``gpus`` GPUs, share the
    requests; the job ends when the busiest one does."""
    if workload.requests is None:
        raise ValueError("inference needs workload.requests")
    total_requests = workload.requests
    requests = -(-total_requests // replicas)
    batch = max(1, min(requests, memory.max_batch))
    prompt, output = workload.prompt_len, workload.output_len
    peak = gpu.tflops_for(workload.compute_precision) * 1e12 * gpus  # tp: in the terms
    prefill_s = 2 * arch.active_params * prompt * requests / (peak * PREFILL_MFU)
    waves = math.ceil(requests / batch)  # batches of the mean request, run in turn

    # Decode reads every weight once per step: the stored (quantized) bytes, at the
    # efficiency of kernels that dequantize as they read (fp8 is a cast: 16-bit's).
    quantized = workload.weight_precision in DEQUANT_ON_READ
    bw_eff = DECODE_BW_EFFICIENCY_QUANT if quantized else DECODE_BW_EFFICIENCY_16BIT
    weight_traffic = memory.weight_bytes
    bnb_gemv = (workload.weight_precision in BNB_GEMV_AT_BATCH_1 and batch == 1)
    if (workload.engine == "hf" and workload.weight_precision in BNB_DEQUANT_TO_16BIT
            and not bnb_gemv):
        # transformers / litgpt over bitsandbytes: each linear's weight is dequantized to
        # a 16-bit copy that is written and read back (memory/weights.py,
        # dequant_workspace_bytes): 2 x 2 bytes a weight more, at 16-bit efficiency
        weight_traffic += 4.0 * arch.linear_params() / gpus
        bw_eff = DECODE_BW_EFFICIENCY_16BIT
    bandwidth = gpu.bandwidth_gbps * 1e9 * bw_eff  # per GPU; shards read in parallel
    step_bytes = weight_traffic + batch * memory.kv_bytes_per_sequence
    step_memory_s = step_bytes / bandwidth
    step_compute_s = 2 * arch.active_params * batch / (peak * DECODE_COMPUTE_MFU)
    if workload.engine == "hf":  # eager decode: the host's launches bound small batches
        step_memory_s = max(step_memory_s, arch.layers * EAGER_HOST_S_PER_LAYER)
    steps = output * waves
    budget = step_token_budget(workload, batch)
    # prompts ride in the decode steps (chunked prefill / in-flight batching), or run in
    # passes of their own before the batch decodes (SGLang's default, generate)
    if workload.engine in PREFILL_IN_DECODE_STEPS:
        engine_s = mixed_steps_seconds(prefill_s, prompt * requests, steps, batch,
                                       step_memory_s, step_compute_s, budget)
        passes = float(steps)
    else:
        engine_s = prefill_s + steps * max(step_memory_s, step_compute_s)
        passes = steps + math.ceil(prompt * requests / budget)
    # tensor parallelism: every pass waits on its all-reduces (TP_ALLREDUCE_LATENCY_S)
    comm_s = tp_allreduce_seconds(arch, gpu, gpus, (prompt + output) * requests, passes)
    engine_s += comm_s
    scaling = 1 - comm_s / engine_s if engine_s > 0 else 1.0
    total_s = engine_s / correction.factor(
        correction.features(workload),
        COEFFICIENTS if coefficients is None else coefficients)
    out_tokens = output * total_requests
    tps = out_tokens / total_s if total_s > 0 else 0.0
    return RuntimeEstimate(hours=total_s / 3600, tokens_per_second=tps, mfu=PREFILL_MFU,
                           scaling=scaling, batch=batch, layout=layout, kind="inference")


class EstimateCache:
    """Memory estimates of one job by GPU count (tensor-parallel / sharding degree),
    computed once each, and what is derived from them per GPU model.

    The estimate does not depend on the GPU model, so planning a job over every model
    and count needs at most one estimate per count; a fit depends on the model and the
    shard only, so it is computed once per (model, shard) however many node sizes use
    that shard. Lives for one planning call. With ``calibration`` (measured records),
    memory and runtime are corrected by them.
    """

    def __init__(self, calibration: Calibration | None = None) -> None:
        self._cache: dict[int, MemoryEstimate] = {}
        self._fits: dict[tuple[str, int], Fit] = {}
        self._layouts: dict[int, tuple[Layout, ...]] = {}
        self._trainable: int | None = None
        self._flops: float | None = None
        self.calibration = calibration or Calibration()
        # the model's tokens/s at a measured configuration: (gpu, batch, sequence, count)
        self.model_tps: dict[tuple[str, int, int, int], float] = {}

    def flops_per_token(self, arch: Architecture, workload: WorkloadSpec) -> float:
        if self._flops is None:
            self._flops = training_flops_per_token(arch, workload)
        return self._flops

    def trainable(self, arch: Architecture, workload: WorkloadSpec) -> int:
        if self._trainable is None:
            self._trainable = trainable_params(arch, workload)
        return self._trainable

    def get(self, gpus: int, arch: Architecture, workload: WorkloadSpec) -> MemoryEstimate:
        if gpus not in self._cache:
            est = estimate_memory(arch, workload, gpus)
            if self.calibration:
                est = calibrated_memory(est, self.calibration, arch, workload, gpus)
            self._cache[gpus] = est
        return self._cache[gpus]

    def fit(self, gpu: GpuSpec, shard: int, arch: Architecture, workload: WorkloadSpec) -> Fit:
        key = (gpu.name, shard)
        fit = self._fits.get(key)
        if fit is None:
            fit = self._fits[key] = check_fit(gpu, shard, self.get(shard, arch, workload),
                                               workload)
        return fit

    def layouts(self, count: int, arch: Architecture, workload: WorkloadSpec,
                ) -> tuple[Layout, ...]:
        found = self._layouts.get(count)
        if found is None:
            found = self._layouts[count] = layouts(arch, workload, count)
        return found


def inference_memory(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
                     estimates: EstimateCache | None = None) -> InferenceMemory:
    """Weights read per step, KV bytes per token and the concurrency that fits, per GPU."""
    from gpuopt.jobs.estimate.fit import check_fit

    est = (estimates or EstimateCache()).get(gpus, arch, workload)
    return _inference_memory(arch, workload, gpus, est, check_fit(gpu, gpus, est, workload))


def _inference_memory(arch: Architecture, workload: WorkloadSpec, gpus: int,
                      est: MemoryEstimate, fit: Fit) -> InferenceMemory:
    kv_b = (KV_BYTES[workload.kv_cache_dtype] if workload.kv_cache_dtype
            else compute_bytes(workload.weight_precision))
    return InferenceMemory(
        weight_bytes=float(est.components["weights"]),
        kv_bytes_per_sequence=arch.kv_cache_width(gpus) * kv_b * mean_kv_layer_tokens(
            arch, workload.prompt_len, workload.output_len),
        max_batch=max(fit.concurrency or 1, 1),
    )


def estimate_runtime(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
                     estimates: EstimateCache | None = None,
                     layout: Layout | None = None,
                     coefficients: Mapping[str, float] | None = None) -> RuntimeEstimate:
    """Hours and throughput of the whole job on ``gpus`` x ``gpu``.

    Inference on several GPUs takes ``layout`` (tensor parallel degree x replicas), or
    else the fastest of the layouts whose memory fits (tensor parallel over all of them
    when none does).
    """
    cache = estimates or EstimateCache()
    if workload.type == "finetune":
        found = layouts(arch, workload, gpus)
        return calibrated_runtime(
            training_runtime(arch, workload, gpu, gpus,
                             layout=found[0].name if found else "",
                             coefficients=coefficients),
            cache.calibration, arch, workload, gpu, gpus, cache.model_tps)
    if layout is None:
        best = best_layout(arch, workload, gpu, gpus, cache)
        layout = best[0] if best else Layout(gpus, 1, f"TP{gpus}" if gpus > 1 else "1 GPU")
    mem = inference_memory(arch, workload, gpu, layout.shard, cache)
    return calibrated_runtime(
        inference_runtime(arch, workload, gpu, layout.shard, mem, layout.replicas,
                          layout.name, coefficients),
        cache.calibration, arch, workload, gpu, gpus, cache.model_tps)


def calibrated_runtime(rt: RuntimeEstimate, calibration: Calibration, arch: Architecture,
                       workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
                       memo: dict[tuple[str, int, int, int], float] | None = None,
                       ) -> RuntimeEstimate:
    """The model's runtime corrected by measured throughput (calibration.py's rule).
    ``memo`` keeps the model's figures at measured configurations (one planning call)."""
    if not calibration.measured_on(gpu.name):
        return rt
    known = memo if memo is not None else {}

    def model_at(batch: int, sequence: int, count: int) -> float:
        key = (gpu.name, batch, sequence, count)
        if key not in known:
            known[key] = estimate_runtime(arch, with_config(workload, batch, sequence), gpu,
                                          count).tokens_per_second
        return known[key]

    adj = throughput_adjustment(calibration.records, record_for(arch, workload, gpu.name, gpus),
                                model_at)
    if not adj.measured or not adj.factor > 0:
        return rt
    return replace(rt, hours=rt.hours / adj.factor,
                   tokens_per_second=rt.tokens_per_second * adj.factor, source=adj.source)


def best_layout(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec, gpus: int,
                estimates: EstimateCache | None = None, nodes: int = 1,
                fabric: Fabric | None = None,
                ) -> tuple[Layout, Fit, RuntimeEstimate] | None:
    """The fastest way to run the job on ``nodes`` nodes of ``gpus`` x ``gpu`` whose
    memory fits, or None. Over several nodes (joined by ``fabric``), fine-tuning is data
    parallel over every GPU (ZeRO/FSDP shard over all of them), and inference runs each
    node's layout as independent replicas on every node. Measured records (calibration)
    are of one node: they correct one-node estimates only."""
    cache = estimates or EstimateCache()
    best: tuple[Layout, Fit, RuntimeEstimate] | None = None
    total = gpus * nodes
    finetune = workload.type == "finetune"
    if finetune and gpus % workload.tensor_parallel:
        return None  # tensor parallelism stays inside a node (its all-reduces need NVLink)
    for lay in cache.layouts(total if finetune else gpus, arch, workload):
        fit = cache.fit(gpu, lay.shard, arch, workload)
        if not fit.fits:
            continue
        if nodes > 1 and not finetune:  # the node's layout, on every node
            lay = Layout(lay.shard, lay.replicas * nodes, lay.name)
        if finetune:
            rt = training_runtime(arch, workload, gpu, total, cache.trainable(arch, workload),
                                  lay.name, cache.flops_per_token(arch, workload),
                                  nodes=nodes, fabric=fabric)
        else:
            est = cache.get(lay.shard, arch, workload)
            mem = _inference_memory(arch, workload, lay.shard, est, fit)
            rt = inference_runtime(arch, workload, gpu, lay.shard, mem, lay.replicas, lay.name)
        if best is None or rt.hours < best[2].hours:
            best = (lay, Fit(fit.gpu, gpus, fit.per_gpu_gib, fit.free_gib, fit.concurrency,
                             fit.memory_source), rt)
    if best is not None and cache.calibration and nodes == 1:
        best = (best[0], best[1], calibrated_runtime(best[2], cache.calibration, arch,
                                                     workload, gpu, gpus, cache.model_tps))
    return best
