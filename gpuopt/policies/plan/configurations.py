"""Candidates per GPU model: every GPU count of an allowed model sold where the job may
run, on one node or (over an inter-node fabric) several, with its memory fit and speed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.fit import Fit, Layout, check_fit, layouts
from gpuopt.jobs.estimate.runtime import EstimateCache, RuntimeEstimate, best_layout, hours_interval
from gpuopt.jobs.spec import WorkloadSpec
from gpuopt.policies.plan.model import PlacementContext
from gpuopt.providers.fabrics import Fabric, fabric_for
from gpuopt.providers.hardware import GpuSpec
from gpuopt.providers.offer import Offer


@dataclass(frozen=True, slots=True)
class Configuration:
    """One way to run the job: a GPU model and count, on how many nodes, its memory fit
    and speed."""

    gpu: GpuSpec
    fit: Fit
    runtime: RuntimeEstimate
    hours: float  # uninterrupted hours for the remaining work
    nodes: int = 1
    fabric: Fabric | None = None  # the offers it takes have this fabric (nodes > 1)

    def takes(self, offer: Offer) -> bool:
        """Can this configuration use the offer (a multi-node one: of its fabric)?"""
        return self.nodes == 1 or fabric_for(offer.cloud, offer.instance_type) == self.fabric


def hours_left(ctx: PlacementContext) -> float | None:
    if ctx.deadline_at is None:
        return None
    return (ctx.deadline_at - ctx.now) / timedelta(hours=1)


@dataclass(slots=True)
class ModelSearch:
    """What the search found for one GPU model, for the reason it is left out."""

    sold: list[int] = field(default_factory=list)  # counts sold in the allowed places
    configs: list[Configuration] = field(default_factory=list)  # fit memory (deadline or not)
    too_small: Fit | None = None  # the largest sold count's fit, when none fits
    too_small_nodes: int = 1  # ... on this many nodes (the most it may span)


def search_model(
    arch: Architecture,
    workload: WorkloadSpec,
    gpu: GpuSpec,
    sold: list[int],
    ctx: PlacementContext,
    estimates: EstimateCache,
    fabrics: Mapping[int, Sequence[Fabric]] | None = None,
    max_nodes: int = 1,
) -> ModelSearch:
    """Every sold count of one GPU model: its memory fit and, when it fits, its speed in
    the fastest layout (data parallel; tensor parallel or replicas for inference); and
    for the counts sold with a fabric (``fabrics``), the same on 2..``max_nodes`` nodes
    over each fabric."""
    found = ModelSearch(sold=sold)
    for count in sold:
        shapes: list[tuple[int, Fabric | None]] = [(1, None)]
        shapes += [(n, f) for f in (fabrics or {}).get(count, ()) for n in range(2, max_nodes + 1)]
        # the estimate depends on the fabric's speed only (inference: not at all)
        known: dict[tuple[int, float], tuple[Layout, Fit, RuntimeEstimate] | None] = {}
        for nodes, fabric in shapes:
            speed = fabric.gbps if fabric is not None and workload.type == "finetune" else 0.0
            if (nodes, speed) not in known:
                known[nodes, speed] = best_layout(arch, workload, gpu, count, estimates, nodes,
                                                  fabric)
            best = known[nodes, speed]
            if best is None:
                continue
            _, fit, rt = best
            found.configs.append(Configuration(gpu, fit, rt, rt.hours * ctx.remaining_fraction,
                                         nodes, fabric))
    if sold and not found.configs:  # the reason names the largest sold count's need
        count = sold[-1]
        nodes = max_nodes if (fabrics or {}).get(count) else 1
        over = count * nodes if workload.type == "finetune" else count  # (sharded over)
        # none when the count is not a multiple of the job's tensor x pipeline x context
        # parallel GPUs: that count is not a way to run it at all
        ways = layouts(arch, workload, over)
        if ways:
            largest = max(ways, key=lambda lay: lay.shard)
            found.too_small = check_fit(gpu, count, estimates.get(largest.shard, arch,
                                                                  workload), workload)
            found.too_small_nodes = nodes
    return found




def deadline_slowdown(workload: WorkloadSpec, ctx: PlacementContext) -> float:
    """What the estimate is multiplied by before it meets a deadline: its p90 (1: exact)."""
    return max(1.0, hours_interval(workload.type)[1]) if ctx.pessimistic_deadline else 1.0


def fastest_first(configs: list[Configuration]) -> list[Configuration]:
    return sorted(configs, key=lambda c: (c.hours, c.gpu.name, c.fit.count, c.nodes,
                                          c.fabric.label if c.fabric else ""))
