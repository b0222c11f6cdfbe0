"""When the job fits on no allowed GPU: what it needs and the changes that would make it
fit, each tried for real."""

from __future__ import annotations

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.fit import candidate_counts, check_fit
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.spec import JobSpec, WorkloadSpec
from gpuopt.providers.hardware import GPUS


def nearest_miss(arch: Architecture, workload: WorkloadSpec, spec: JobSpec) -> str:
    """What the job needs and the changes that would make it fit, tried for real."""
    allowed = [GPUS[g] for g in spec.resources.gpus]
    largest = max(allowed, key=lambda g: g.memory_gib)
    least = workload.model_parallel if workload.type == "finetune" else 1
    need = estimate_memory(arch, workload, least).total_gib
    head = (f"needs {need:.0f} GiB per GPU; the largest allowed is {largest.name} "
            f"{largest.memory_gib:.0f} GiB")
    ideas: list[str] = []
    max_gpus = spec.resources.max_gpus_per_node
    if workload.type == "finetune":
        variants: list[tuple[str, WorkloadSpec]] = []
        if workload.zero_stage < 3 and not workload.fsdp:
            variants.append(("ZeRO-3 (workload.zero_stage: 3)",
                             workload.model_copy(update={"zero_stage": 3})))
        if workload.method != "qlora":
            variants.append(("QLoRA (workload.method: qlora)",
                             workload.model_copy(update={"method": "qlora", "precision": "nf4"})))
        if workload.checkpointing != "full":
            variants.append(("gradient checkpointing",
                             workload.model_copy(update={"gradient_checkpointing": "full"})))
        for label, w in variants:
            for count in candidate_counts(arch, w, 8):
                if check_fit(largest, count, estimate_memory(arch, w, count), w).fits:
                    ideas.append(label if count == 1 else f"{label} on {count} GPUs")
                    break
    else:
        for count in candidate_counts(arch, workload, 8):
            if count > max_gpus and check_fit(
                largest, count, estimate_memory(arch, workload, count), workload
            ).fits:
                ideas.append(f"allow {count} GPUs (resources.max_gpus_per_node: {count})")
                break
        if workload.weight_precision in ("bf16", "fp16", "fp32"):
            w = workload.model_copy(update={"precision": "int4"})
            if check_fit(largest, 1, estimate_memory(arch, w, 1), w).fits:
                ideas.append("4-bit weights (workload.precision: int4)")
    if largest.name != max(GPUS.values(), key=lambda g: g.memory_gib).name:
        ideas.append("allow larger GPUs (resources.gpus)")
    return head + (": " + ", ".join(ideas) if ideas else ": no change tried makes it fit")

