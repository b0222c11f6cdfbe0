"""Model parallelism for training: what one GPU holds and what it waits on.

Megatron-LM / NeMo and torchtitan split a training job over ``tensor_parallel`` x
``pipeline_parallel`` x ``context_parallel`` GPUs per data-parallel replica:

- tensor parallel (TP, Shoeybi et al. 2019, sec. 3): each layer's matmuls split over
  the ranks; two all-reduces per layer in forward (after attention, after the MLP) and
  two in backward, on the critical path. With sequence parallelism (Korthikanti et al.
  2022, sec. 4.2.2; NeMo's recipes set `sequence_parallel=True` with TP > 1, torchtitan
  always pairs TP with SequenceParallel norms) the all-reduce becomes a reduce-scatter
  + all-gather of the same volume and every activation is split over the ranks.
- pipeline parallel (PP, Narayanan et al. 2021, sec. 2.2, 1F1B): the layers split into
  stages; with m micro-batches a step idles (p-1)/(m+p-1) of its time (the bubble) and
  stage 0 holds p micro-batches' activations at once (min(p, m)).
- context parallel (CP, ring attention; Megatron-Core / TransformerEngine, torchtitan's
  `context_parallel_degree`): each sequence is split over the ranks; K and V go around
  the ring so every rank attends to the whole sequence; activations and attention work
  are split by CP.

Data parallel (DP) is what remains; ZeRO / FSDP / Megatron's distributed optimizer
shard over DP x CP (the ranks that hold the same part of the model: Megatron's
data-parallel group "with context parallel", torchtitan's dp_shard_cp mesh), and
gradients are exchanged once per optimizer step, after ``gradient_accumulation``
micro-batches. Pure functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.jobs.architectures import Architecture
    from gpuopt.jobs.spec import WorkloadSpec
    from gpuopt.providers.hardware import GpuSpec


def replicas(workload: WorkloadSpec, gpus: int) -> int:
    """Data-parallel replicas on ``gpus`` GPUs (each spans tp x pp x cp of them)."""
    return max(1, gpus // workload.model_parallel)


def shard_group(workload: WorkloadSpec, gpus: int) -> int:
    """GPUs that hold the same part of the model (DP x CP): what ZeRO/FSDP shard over
    and what the gradients are reduced over."""
    return max(1, gpus // (workload.tensor_parallel * workload.pipeline_parallel))


def stage_param_share(arch: Architecture, pp: int) -> float:
    """Of the model's parameters, the share the most loaded pipeline stage holds: an
    even share of the transformer layers plus the larger of the vocabulary matrices
    (stage 0 holds the input embedding, the last stage the output projection;
    Megatron-LM's pre_process / post_process stages)."""
    if pp <= 1:
        return 1.0
    vocab = arch.embedding_params()
    body = max(0, arch.params - vocab - arch.head_params())
    return min(1.0, (body / pp + vocab) / arch.params)


def param_share(arch: Architecture, workload: WorkloadSpec) -> float:
    """Of the model's parameters, states and gradients, the share on one GPU before
    ZeRO/FSDP sharding: the stage's share split over the TP ranks."""
    return stage_param_share(arch, workload.pipeline_parallel) / workload.tensor_parallel


def layer_share(arch: Architecture, pp: int) -> float:
    """Of the layers, the share on one stage (ceil(layers / pp), Megatron's even split)."""
    return -(-arch.layers // pp) / arch.layers


def in_flight_microbatches(workload: WorkloadSpec) -> int:
    """Micro-batches whose activations stage 0 holds at once under 1F1B: min(p, m)
    (Narayanan et al. 2021, sec. 2.2.1); 1 without pipelining."""
    return min(workload.pipeline_parallel, workload.gradient_accumulation)


def bubble_fraction(workload: WorkloadSpec) -> float:
    """The share of a 1F1B step the pipeline idles: (p-1)/(m+p-1) (Narayanan et al. 2021,
    sec. 2.2), m = micro-batches per optimizer step."""
    p, m = workload.pipeline_parallel, workload.gradient_accumulation
    return (p - 1) / (m + p - 1)


def forward_passes(workload: WorkloadSpec) -> float:
    """Forward-sized passes a micro-batch's layer runs (forward, backward = 2, plus what
    activation checkpointing recomputes), for the collectives each pass repeats."""
    extra = {"full": 1.0, "selective": 0.5}.get(workload.checkpointing, 0.0)
    return 3.0 + extra


def micro_tokens(workload: WorkloadSpec) -> float:
    """Tokens of one micro-batch on one CP rank."""
    return workload.batch_size * workload.sequence_length / workload.context_parallel


def tp_seconds(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec) -> float:
    """One micro-batch's TP collectives on one GPU: two per layer per forward-sized pass
    (forward 2, backward 2, recomputation 2 more), over this stage's layers, each its
    latency plus ring traffic (runtime.tp_allreduce_seconds, the inference model)."""
    from gpuopt.jobs.estimate.runtime import tp_allreduce_seconds

    tp = workload.tensor_parallel
    if tp <= 1:
        return 0.0
    passes = forward_passes(workload)
    full = tp_allreduce_seconds(arch, gpu, tp, micro_tokens(workload) * passes, passes)
    return full * layer_share(arch, workload.pipeline_parallel)


def _link_bytes_per_s(gpu: GpuSpec) -> float:
    from gpuopt.jobs.estimate.runtime import LINK_EFFICIENCY, link_one_way_gbps

    return link_one_way_gbps(gpu) * 1e9 * LINK_EFFICIENCY


def pp_p2p_seconds(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec) -> float:
    """One micro-batch's stage-boundary sends on one GPU: its output activations forward
    and their gradient backward, hidden_size 16-bit values a token, split over the TP
    ranks (Megatron's scatter-gather optimisation, Narayanan et al. 2021 sec. 4.1)."""
    if workload.pipeline_parallel <= 1:
        return 0.0
    sent = 2 * micro_tokens(workload) * arch.hidden_size * 2.0 / workload.tensor_parallel
    return sent / _link_bytes_per_s(gpu)


def _kv_chunk_bytes(arch: Architecture, workload: WorkloadSpec) -> float:
    """One layer's local K and V on one CP rank: 16-bit, kv heads split over TP."""
    return micro_tokens(workload) * 2 * arch.kv_dim * 2.0 / workload.tensor_parallel


def cp_ring_seconds(arch: Architecture, workload: WorkloadSpec, gpu: GpuSpec) -> float:
    """One micro-batch's ring-attention traffic on one GPU: each layer's local K and V
    (16-bit, kv heads split over TP) pass cp-1 times around the ring in every forward
    and recomputation, and K, V and their gradients in backward (twice a forward's),
    over this stage's layers. Runs beside the attention blocks' compute (overlapped
    as data-parallel collectives are: runtime.COMM_OVERLAP)."""
    cp = workload.context_parallel
    if cp <= 1:
        return 0.0
    kv = _kv_chunk_bytes(arch, workload)
    layers = arch.layers * layer_share(arch, workload.pipeline_parallel)
    sent = (cp - 1) * kv * layers * forward_passes(workload)
    return sent / _link_bytes_per_s(gpu)


def cp_exchange_bytes(arch: Architecture, workload: WorkloadSpec) -> float:
    """Ring attention's receive buffers for one layer: a neighbour's K and V chunk
    beside the one being sent (double buffering), 16-bit."""
    if workload.context_parallel <= 1:
        return 0.0
    return 2 * _kv_chunk_bytes(arch, workload)
