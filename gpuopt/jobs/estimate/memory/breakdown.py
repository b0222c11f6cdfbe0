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
    # what the model build / checkpoint load reserves beyond the training step's peak
    # (memory/load.py): total_bytes is then the load's peak
    "load_peak",
)


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """Peak memory of one GPU when the job runs on ``gpus`` GPUs."""

    components: Mapping[str, int]  # bytes, keys from COMPONENTS
    gpus: int
    # Inference: sequences whose KV cache the components hold (the engine's cap), and the
    # bytes one sequence more or less costs (its KV cache + the allocator's share).
    sequences: int = 1
    per_sequence_bytes: int = 0
    # "model", or "measured (N runs)" when calibration corrected it (a
    # ``measured_correction`` component then holds the difference)
    source: str = "model"

    @classmethod
    def of(cls, parts: dict[str, float], gpus: int, sequences: int = 1,
           per_sequence: float = 0.0) -> MemoryEstimate:
        ordered = {k: max(0, round(parts.get(k, 0.0))) for k in COMPONENTS}
        return cls(components=MappingProxyType(ordered), gpus=gpus, sequences=sequences,
                   per_sequence_bytes=round(per_sequence))

    @property
    def total_bytes(self) -> int:
        return sum(self.components.values())

    @property
    def allocated_bytes(self) -> int:
        """What torch.cuda.max_memory_allocated would show over the steps: no context, no
        allocator slack, no load phase (the framework that has one, torchtune, resets the
        peak stats after the model is set up: utils.memory_stats_log)."""
        c = self.components
        return self.total_bytes - c["cuda_context"] - c["allocator"] - c.get("load_peak", 0)

    def bytes_at(self, sequences: int) -> int:
        """Peak with ``sequences`` concurrent sequences instead of the cap (inference)."""
        return self.total_bytes - (self.sequences - sequences) * self.per_sequence_bytes

    @property
    def min_bytes(self) -> int:
        """The least the job runs in: one whole sequence of KV cache (inference)."""
        return self.bytes_at(1)

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB
