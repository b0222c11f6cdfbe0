"""Does a training job's model parallelism divide its model? (the loader's check, with
the field it names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuopt.jobs.architectures import Architecture
    from gpuopt.jobs.spec import WorkloadSpec


def parallel_problems(arch: Architecture, w: WorkloadSpec) -> list[tuple[str, str]]:
    """(field, why) for each degree the model cannot be split by. Tensor parallelism
    splits the attention heads and the kv heads over the ranks (Megatron-LM asserts
    num_attention_heads % tensor_model_parallel_size == 0 and the same of
    num_query_groups; torchtitan's ColwiseParallel shards wq/wk/wv by heads); pipeline
    parallelism gives every stage at least one layer."""
    out: list[tuple[str, str]] = []
    tp = w.tensor_parallel
    if tp > 1 and (arch.heads % tp or arch.kv_heads % tp):
        out.append(("tensor_parallel", f"{tp} does not divide {arch.name}'s {arch.heads} "
                    f"attention heads and {arch.kv_heads} kv heads"))
    if w.pipeline_parallel > arch.layers:
        out.append(("pipeline_parallel", f"{w.pipeline_parallel} stages for "
                    f"{arch.name}'s {arch.layers} layers: at most {arch.layers}"))
    return out
