"""Peak GPU memory of a job, per GPU, as a breakdown in bytes.

Nothing here encodes a rule of thumb: "inference ~ 1.5 x weights" or "fine-tuning ~
4-8 x inference" come out of the component models (see tests/jobs/estimate/test_memory.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuopt.jobs.estimate.memory.breakdown import COMPONENTS, MemoryEstimate
from gpuopt.jobs.estimate.memory.constants import ALLOCATOR_OVERHEAD, CUDA_CONTEXT_BYTES, GIB

if TYPE_CHECKING:
    from gpuopt.jobs.architectures import Architecture
    from gpuopt.jobs.spec import JobSpec, WorkloadSpec

# Frameworks whose k-bit (QLoRA) fine-tuning goes through PEFT + bitsandbytes.
PEFT_FRAMEWORKS = frozenset({"hf", "deepspeed"})

__all__ = ["COMPONENTS", "GIB", "MemoryEstimate", "estimate_job", "estimate_memory",
           "shards_with_count"]


def shards_with_count(workload: WorkloadSpec) -> bool:
    """Does per-GPU memory shrink with more GPUs? Tensor parallel inference, ZeRO, FSDP."""
    if workload.type == "inference":
        return True
    return workload.fsdp or workload.zero_stage > 0 or workload.model_parallel > 1


def estimate_memory(arch: Architecture, workload: WorkloadSpec, gpus: int = 1) -> MemoryEstimate:
    from gpuopt.jobs.estimate.memory import inference, training, weights

    if gpus < 1:
        raise ValueError("gpus must be >= 1")
    precision = workload.weight_precision
    parts: dict[str, float] = {}
    if workload.type == "inference":
        w = weights.weight_bytes(arch, precision, workload.double_quant, workload.bits,
                                 workload.group_size)
        tp = gpus
        # The engine (vLLM, TensorRT-LLM) runs at most `concurrency` sequences at once
        # (max_num_seqs; default: the engine's, engines.py) and as many as its KV cache
        # holds: the breakdown shows the cache at that cap, and the fit test needs only
        # one whole sequence of it (see fit.py). hf generate: its static batch.
        from gpuopt.jobs.estimate.engines import default_concurrency

        seqs = workload.batch_size * (workload.concurrency
                                      or default_concurrency(workload.engine, None))
        kv_b = (
            inference.KV_BYTES[workload.kv_cache_dtype]
            if workload.kv_cache_dtype
            else weights.compute_bytes(precision)
        )
        step = workload.max_batched_tokens or inference.DEFAULT_STEP_TOKENS
        if workload.engine == "hf":  # generate prefills its whole batch at once
            step = workload.max_batched_tokens or workload.prompt_len * seqs
        per_seq = inference.kv_cache_bytes(arch, workload.sequence_length, 1, kv_b, tp)
        parts["weights"] = w / tp
        parts["kv_cache"] = per_seq * seqs + inference.sliding_prefill_bytes(
            arch, workload.sequence_length, step, kv_b, tp)
        parts["activations"] = inference.step_working_bytes(
            arch, workload.prompt_len, seqs, step, precision, workload.flash_attention, tp,
        )
        parts["workspace"] = weights.dequant_workspace_bytes(arch, precision, tp,
                                                             workload.double_quant)
        allocated = sum(parts.values())
        parts["allocator"] = allocated * ALLOCATOR_OVERHEAD
        parts["cuda_context"] = CUDA_CONTEXT_BYTES
        return MemoryEstimate.of(parts, gpus, sequences=seqs,
                                 per_sequence=per_seq * (1 + ALLOCATOR_OVERHEAD))
    else:
        from gpuopt.jobs.estimate import parallel

        stage = 3 if workload.fsdp else workload.zero_stage
        # ZeRO / FSDP shard over the GPUs that hold the same part of the model (DP x CP);
        # tensor and pipeline parallelism split the model itself (parallel.py)
        n = parallel.shard_group(workload, gpus)
        share = parallel.param_share(arch, workload)
        precision = workload.stored_precision  # fp8 training keeps bf16 weights
        w = weights.weight_bytes(arch, precision, workload.double_quant, workload.bits,
                                 workload.group_size)
        parts["weights"] = w * share / (n if stage >= 3 else 1)
        if precision in weights.QUANTIZED and workload.framework in PEFT_FRAMEWORKS:
            # PEFT's prepare_model_for_kbit_training casts every 16-bit parameter that is
            # not a bitsandbytes Params4bit (embeddings, lm_head, norms, biases) to fp32
            # (peft/utils/other.py: "cast all non INT8 parameters to fp32"): 2 more bytes
            # each. litgpt and torchtune quantize without PEFT and keep them 16-bit.
            parts["weights"] += (2 * weights.unquantized_params(arch) * share
                                 / (n if stage >= 3 else 1))
        if (workload.fsdp and workload.method == "full" and workload.keeps_master_weights
                and precision in ("bf16", "fp16")):
            # FSDP mixed precision (MixedPrecisionPolicy(param_dtype=bfloat16), torchtitan
            # parallelize_llama.py; HF Trainer's FSDP) shards the fp32 parameters and
            # casts them to 16 bits only for the all-gather: the fp32 shard is the master
            # copy (counted with the optimizer) and no 16-bit copy is resident but the
            # gathered layers (workspace). ZeRO-3 keeps 16-bit partitions beside its fp32
            # master partitions, as counted.
            parts["weights"] = 0.0
        if workload.offload == "params":
            # FSDP / ZeRO-3 CPU offload: only the gathered layers are on the GPU
            parts["weights"] = 0.0
        states = training.trainable_states(
                arch,
                workload.method,
                precision,
                workload.optimizer,
                workload.lora_targets,
                workload.lora_rank,
                shards_optimizer=n if stage >= 1 else 1,
                shards_grads=n if stage >= 2 else 1,
                master_weights=workload.keeps_master_weights,
                optimizer_in_backward=workload.optimizer_in_backward,
                offload=workload.offload,
            )
        parts.update({k: v * share for k, v in states.items()})
        # each CP rank holds its 1/cp of every sequence
        seq, batch = workload.sequence_length // workload.context_parallel, workload.batch_size
        activations = training.activation_bytes(
            arch, seq, batch, workload.method, precision, workload.lora_targets,
            workload.lora_rank, workload.flash_attention, workload.checkpointing,
            training.peft_fp32_stream(precision, workload.framework),
            offload=workload.offload == "activations",
            lora_dropout=workload.framework in training.LORA_DROPOUT_FRAMEWORKS,
            fused_qkv=workload.framework in training.FUSED_QKV_FRAMEWORKS,
            quantized_saves_input=(workload.framework
                                   not in training.QUANT_LINEAR_SAVES_WEIGHT_ONLY),
            op_sac=workload.framework in training.OP_SAC_FRAMEWORKS,
            compiled=workload.torch_compile,
        )
        # TP with sequence parallelism splits every activation over the ranks
        # (Korthikanti et al. 2022, eq. 4: 34 s b h / t); a pipeline stage keeps its
        # layers' share for each micro-batch in flight (1F1B: stage 0 holds min(p, m))
        tp = workload.tensor_parallel
        per_microbatch = activations * parallel.layer_share(arch, workload.pipeline_parallel) / tp
        parts["activations"] = per_microbatch * parallel.in_flight_microbatches(workload)
        # the loss is computed on the last stage only, vocabulary-parallel over TP
        # (Megatron's vocab_parallel_cross_entropy, torchtitan's loss_parallel)
        logits = training.loss_logits_bytes(
            arch, seq, batch, precision, workload.loss_kind,
            keeps_logits=workload.framework not in training.FREES_LOGITS_BEFORE_BACKWARD) / tp
        if workload.pipeline_parallel > 1:  # the peak stage: stage 0 or the last one
            logits = max(0.0, logits + per_microbatch - parts["activations"])
        parts["logits"] = logits
        workspace = weights.dequant_workspace_bytes(arch, precision,
                                                    double_quant=workload.double_quant) / tp
        if stage >= 3 and n > 1:
            grad_b = weights.compute_bytes(precision) if workload.method == "full" else 0.0
            workspace += training.zero3_gather_bytes(arch, grad_b) / tp
        parts["workspace"] = workspace + parallel.cp_exchange_bytes(arch, workload)
    allocated = sum(parts.values())
    parts["allocator"] = allocated * ALLOCATOR_OVERHEAD
    parts["cuda_context"] = CUDA_CONTEXT_BYTES
    from gpuopt.jobs.estimate.memory.load import load_peak

    load = load_peak(arch, workload, gpus)
    if load is not None:
        # The caching allocator keeps what the model build reserved (no empty_cache):
        # the device needs the larger of the build's reservation and the step's peak;
        # what the build needs beyond the step is this component (0: the step is the
        # peak). The step's allocations reuse the build's cached free blocks.
        parts["load_peak"] = max(0.0, load.reserved + CUDA_CONTEXT_BYTES
                                 - sum(parts.values()))
    return MemoryEstimate.of(parts, gpus)


def estimate_job(spec: JobSpec, gpus: int = 1) -> MemoryEstimate:
    return estimate_memory(spec.resolved_model(), spec.workload, gpus)
