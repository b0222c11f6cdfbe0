"""The result of an estimate: bytes per GPU by component."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpuopt.jobs.estimate.memory.constants import GIB

COMPONENTS = (
    "weights",
    "adapters",
    "gradients",
    "optimizer",
    "activations",
    "logits",
    "kv_cache",
    "workspace",
    "allocator",
    "cuda_context",
)


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """Peak memory of one GPU when the job runs on ``gpus`` GPUs."""

    components: Mapping[str, int]  # bytes, keys from COMPONENTS
    gpus: int

    @classmethod
    def of(cls, parts: dict[str, float], gpus: int) -> MemoryEstimate:
        ordered = {k: max(0, round(parts.get(k, 0.0))) for k in COMPONENTS}
        return cls(components=MappingProxyType(ordered), gpus=gpus)

    @property
    def total_bytes(self) -> int:
        return sum(self.components.values())

    @property
    def allocated_bytes(self) -> int:
        """What torch.cuda.max_memory_allocated would show: no context, no allocator slack."""
        return self.total_bytes - self.components["cuda_context"] - self.components["allocator"]

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB

    def gib(self) -> dict[str, float]:
        return {k: v / GIB for k, v in self.components.items()}
