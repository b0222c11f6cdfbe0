"""The inter-node fabric value: a cloud's GPU-to-GPU network between instances.

Each cloud's table (instance type -> Fabric) is in its adapter folder's capabilities
module, reached through the cloud registry; providers/fabrics.py looks one up."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Fabric:
    name: str  # "EFA", "GPUDirect-TCPX", "InfiniBand NDR", ...
    gbps: float  # per instance, Gbit/s, as published
    # the page the figure comes from (not part of the identity: two instance types with
    # the same fabric at the same speed are interchangeable nodes for the planner)
    source: str = field(compare=False)

    @property
    def bytes_per_s(self) -> float:
        return self.gbps * 1e9 / 8

    @property
    def label(self) -> str:
        """'EFA 3200 Gbps'."""
        return f"{self.name} {self.gbps:g} Gbps"
