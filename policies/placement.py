"""Rank placements by the expected cost of finishing the job, not by price per hour.

For every allowed GPU model the smallest GPU count that fits (and, under a deadline,
finishes in time on-demand) is taken; every offer of that configuration in the allowed
clouds, regions and markets becomes a candidate costed as

    on-demand / owned reserved:  est_hours x price
    spot:  (est_hours + E[preemptions] x (restart overhead + work lost since the last
            checkpoint)) x price, with E[preemptions] = hazard x est_hours

and candidates over the budget or the hourly cap, or unable to absorb one preemption
before the deadline (spot), are left out with the reason. Pure: the caller hands in
the offers, the time and what was observed; nothing here reads a clock or a database.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from gpuopt.core.money import MICRO_USD
from gpuopt.core.places import Place
from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.estimate.fit import Fit, candidate_counts, check_fit, usable_gib
from gpuopt.jobs.estimate.memory import estimate_memory
from gpuopt.jobs.estimate.runtime import EstimateCache, RuntimeEstimate, estimate_runtime
from gpuopt.jobs.spec import JobSpec, WorkloadSpec
from gpuopt.policies.hazard import RESTART_OVERHEAD_HOURS, preemptions_per_hour
from gpuopt.policies.index import OfferIndex
from gpuopt.providers.clouds import default_preemptions_per_hour
from gpuopt.providers.hardware import GPUS, GpuSpec
from gpuopt.providers.offer import Market, Offer

CENT = Decimal("0.01")
BUYABLE = (Market.ON_DEMAND, Market.SPOT)


@dataclass(frozen=True, slots=True)
class OwnedReserved:
    """Reserved capacity the team already pays for (configuration [reserved])."""

    cloud: str
    region: str
    instance_type: str
    count: int  # instances free for gpuopt


@dataclass(frozen=True, slots=True)
class PlacementContext:
    now: datetime
    deadline_at: datetime | None = None
    budget_left: Decimal | None = None  # None: the spec's budget, untouched
    remaining_fraction: float = 1.0  # of the job's work (re-placement after progress)
    restart_overhead_hours: float = RESTART_OVERHEAD_HOURS
    # region -> (spot preemptions seen there, spot hours held there), from the ledger
    observed_preemptions: Mapping[Place, tuple[int, float]] = field(default_factory=dict)
    default_preemptions: Mapping[str, float] = field(
        default_factory=default_preemptions_per_hour
    )
    # places to stay away from for a while (repeated preemptions)
    avoid: frozenset[Place] = frozenset()
    owned_reserved: Sequence[OwnedReserved] = ()
    markets: tuple[Market, ...] | None = None  # force e.g. (ON_DEMAND,) under a deadline
    top: int = 20


@dataclass(frozen=True, slots=True)
class Candidate:
    offer: Offer
    fit: Fit
    runtime: RuntimeEstimate
    est_hours: float  # uninterrupted hours for the remaining work
    expected_hours: float  # with expected preemption losses
    expected_cost: Decimal
    expected_preemptions: float
    hazard_source: str  # "cloud advisor" | "observed" | "default" | "" (not spot)
    reason: str = ""

    @property
    def risk(self) -> str:
        if self.offer.market is not Market.SPOT:
            return "none"
        n = self.expected_preemptions
        level = "low" if n < 0.5 else "medium" if n < 2 else "high"
        return f"{level} ({n:.1f})"

    def to_json(self) -> dict[str, object]:
        o = self.offer
        return {
            "gpu": o.gpu,
            "count": o.gpu_count,
            "cloud": o.cloud,
            "region": o.region,
            "zone": o.zone,
            "instance_type": o.instance_type,
            "market": o.market.value,
            "price_per_hour": float(o.price_per_hour),
            "est_hours": round(self.est_hours, 4),
            "expected_hours": round(self.expected_hours, 4),
            "expected_cost": float(self.expected_cost),
            "expected_preemptions": round(self.expected_preemptions, 3),
            "risk": self.risk,
            "risk_source": self.hazard_source,
            "per_gpu_gib": round(self.fit.per_gpu_gib, 2),
            "tokens_per_second": round(self.runtime.tokens_per_second, 1),
            "fits": self.fit.fits,
            "source": o.source,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Exclusion:
    gpu: str
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    candidates: tuple[Candidate, ...]
    excluded: tuple[Exclusion, ...]
    nearest_miss: str | None = None  # when nothing fits anywhere: what to change

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None


@dataclass(frozen=True, slots=True)
class _Config:
    gpu: GpuSpec
    fit: Fit
    runtime: RuntimeEstimate


def _hours_left(ctx: PlacementContext) -> float | None:
    if ctx.deadline_at is None:
        return None
    return (ctx.deadline_at - ctx.now) / timedelta(hours=1)


def _configs(
    arch: Architecture,
    workload: WorkloadSpec,
    spec: JobSpec,
    ctx: PlacementContext,
    has_offers: Callable[[str, int], bool],
) -> tuple[list[_Config], list[Exclusion], bool]:
    """Per allowed GPU model, the smallest count that fits, meets the deadline on-demand
    and is sold somewhere (AWS sells A100s only by 8: then 8 is what "needed" means).

    Also says whether the job fits the memory of any allowed GPU at all.
    """
    configs: list[_Config] = []
    excluded: list[Exclusion] = []
    hours_left = _hours_left(ctx)
    estimates = EstimateCache()  # memory does not depend on the GPU model: once per count
    fits_somewhere = False
    for name in spec.resources.gpus:
        gpu = GPUS[name]
        counts = candidate_counts(arch, workload, spec.resources.max_gpus_per_node)
        fits = [check_fit(gpu, c, estimates.get(c, arch, workload)) for c in counts]
        fitting = [f for f in fits if f.fits]
        if not fitting:
            worst = fits[-1]
            excluded.append(Exclusion(name, (
                f"does not fit: needs {worst.per_gpu_gib:.1f} GiB per GPU on {worst.count}, "
                f"{usable_gib(gpu):.1f} GiB usable"
            )))
            continue
        fits_somewhere = True
        sold = [f for f in fitting if has_offers(name, f.count)]
        if not sold:
            counts_text = "/".join(str(f.count) for f in fitting)
            excluded.append(Exclusion(name, f"no offer for {name} x{counts_text}"))
            continue
        chosen: _Config | None = None
        slowest_hours = 0.0
        for fit in sold:
            rt = estimate_runtime(arch, workload, gpu, fit.count, estimates)
            hours = rt.hours * ctx.remaining_fraction
            slowest_hours = hours
            if hours_left is None or hours <= hours_left:
                chosen = _Config(gpu, fit, rt)
                break
        if chosen is None:
            excluded.append(Exclusion(name, (
                f"cannot meet the deadline even on-demand: needs {slowest_hours:.1f} h, "
                f"{max(hours_left or 0.0, 0.0):.1f} h left"
            )))
            continue
        configs.append(chosen)
    return configs, excluded, fits_somewhere


def _allowed_markets(spec: JobSpec, ctx: PlacementContext) -> tuple[Market, ...]:
    if ctx.markets is not None:
        return ctx.markets
    return {
        "never": (Market.ON_DEMAND,),
        "always": (Market.SPOT,),
        "auto": BUYABLE,
    }[spec.resources.spot]


def _lost_hours_per_preemption(spec: JobSpec, est_hours: float, overhead: float) -> float:
    """Restart overhead plus, on average, half a checkpoint interval of lost work.

    Without checkpoints a preemption loses on average half of the run so far.
    """
    if spec.checkpoint is None:
        return overhead + est_hours / 2
    interval = spec.checkpoint.interval / timedelta(hours=1)
    return overhead + min(interval, est_hours) / 2


def _owned_offers(index: OfferIndex, ctx: PlacementContext) -> list[Offer]:
    owned: list[Offer] = []
    for r in ctx.owned_reserved:
        if r.count <= 0:
            continue
        like = index.on_demand_offer(r.cloud, r.region, r.instance_type)
        if like is not None:
            owned.append(replace(like, market=Market.RESERVED_1Y, zone=None,
                                 price_per_hour=Decimal(0), source=like.source))
    return owned


def plan_job(spec: JobSpec, index: OfferIndex, ctx: PlacementContext) -> Plan:
    arch = spec.resolved_model()
    workload = spec.workload
    markets = _allowed_markets(spec, ctx)
    owned = _owned_offers(index, ctx)

    def has_offers(gpu: str, count: int) -> bool:
        return any(index.sorted_offers(gpu, count, m) for m in markets) or any(
            o.gpu == gpu and o.gpu_count == count for o in owned
        )

    configs, excluded, fits_somewhere = _configs(arch, workload, spec, ctx, has_offers)
    budget = ctx.budget_left if ctx.budget_left is not None else spec.budget
    cap = spec.resources.max_price_per_hour
    hours_left = _hours_left(ctx)
    clouds = set(spec.resources.clouds)
    regions = set(spec.resources.regions) if spec.resources.regions else None

    heap: list[tuple[float, float, int, Candidate]] = []  # min-heap of the top N by -cost
    best_of_gpu: dict[str, Candidate] = {}  # cheapest per GPU model, for the pick's reason
    seq = 0
    for cfg in configs:
        hours = cfg.runtime.hours * ctx.remaining_fraction
        lost = _lost_hours_per_preemption(spec, hours, ctx.restart_overhead_hours)
        why: Counter[str] = Counter()
        pool = [o for o in owned if o.gpu == cfg.gpu.name and o.gpu_count == cfg.fit.count]
        for market in markets:
            listed = index.sorted_offers(cfg.gpu.name, cfg.fit.count, market)
            for offer in (*pool, *listed) if market is Market.ON_DEMAND else listed:
                price = float(offer.price_per_hour)
                # Every candidate costs at least price x hours: once that exceeds the N-th
                # best (and this GPU model has its best already), no later, pricier offer
                # of this list can enter the top N.
                if (len(heap) >= ctx.top and price * hours >= -heap[0][0]
                        and cfg.gpu.name in best_of_gpu):
                    break
                if offer.cloud not in clouds or (regions and offer.region not in regions):
                    why["no offer in the allowed clouds/regions"] += 1
                    continue
                if offer.place in ctx.avoid:
                    why["avoided after repeated preemptions"] += 1
                    continue
                if cap is not None and offer.price_per_hour > cap:
                    why[f"over the hourly cap (${cap}/h)"] += 1
                    continue
                n_pre, source = 0.0, ""
                expected = hours
                if offer.market is Market.SPOT:
                    hazard, source = preemptions_per_hour(
                        offer, ctx.observed_preemptions, ctx.default_preemptions
                    )
                    n_pre = hazard * hours
                    expected = hours + n_pre * lost
                    slack_needed = hours + lost + ctx.restart_overhead_hours
                    if hours_left is not None and slack_needed > hours_left:
                        why["spot: no slack for a preemption before the deadline"] += 1
                        continue
                cost = (offer.price_per_hour * Decimal(repr(expected))).quantize(
                    MICRO_USD, rounding=ROUND_HALF_EVEN
                )
                if budget is not None and cost > budget:
                    why[f"over the budget (${budget})"] += 1
                    continue
                cand = Candidate(offer, cfg.fit, cfg.runtime, hours, expected, cost, n_pre,
                                 source)
                known = best_of_gpu.get(cfg.gpu.name)
                if known is None or cost < known.expected_cost:
                    best_of_gpu[cfg.gpu.name] = cand
                seq += 1
                item = (-float(cost), -hours, -seq, cand)
                if len(heap) < ctx.top:
                    heapq.heappush(heap, item)
                elif item > heap[0]:
                    heapq.heapreplace(heap, item)
        if cfg.gpu.name not in best_of_gpu and why:
            reason, _ = why.most_common(1)[0]
            excluded.append(Exclusion(cfg.gpu.name, reason))

    ranked = sorted(
        (c for *_, c in heap),
        key=lambda c: (c.expected_cost, c.est_hours, c.offer.price_per_hour, c.offer.key),
    )
    if ranked:
        best = ranked[0].expected_cost
        others = [c for g, c in best_of_gpu.items() if g != ranked[0].offer.gpu]
        ranked = [replace(ranked[0], reason=top_reason(ranked[0], others))] + [
            replace(c, reason=f"{_money(c.expected_cost - best)} more than the top pick")
            for c in ranked[1:]
        ]
    nearest = None if fits_somewhere else nearest_miss(arch, workload, spec)
    return Plan(tuple(ranked), tuple(excluded), nearest)


def _where(o: Offer) -> str:
    return o.zone or o.region


def _money(x: Decimal) -> str:
    return f"${x.quantize(CENT, rounding=ROUND_HALF_EVEN):,}"


def top_reason(top: Candidate, others: Sequence[Candidate]) -> str:
    """One sentence on why the top pick wins, against the best other GPU model."""
    o = top.offer
    head = f"{o.gpu} x{o.gpu_count} {o.market.value} in {o.cloud} {_where(o)}"
    other = min(others, key=lambda c: c.expected_cost, default=None)
    if other is None:
        cost = _money(top.expected_cost)
        return f"{head}: the only GPU model that fits within the limits: {cost}"
    p_top, p_other = top.offer.price_per_hour, other.offer.price_per_hour
    vs = f"{_money(top.expected_cost)} vs {_money(other.expected_cost)}"
    name = f"{other.offer.gpu} x{other.offer.gpu_count}"
    if p_top > p_other > 0:
        speed = other.est_hours / top.est_hours if top.est_hours > 0 else float("inf")
        return (f"{head}: {p_top / p_other:.1f}x the price per hour of {name} but "
                f"{speed:.1f}x faster: {vs}")
    if top.est_hours > other.est_hours > 0:
        return (f"{head}: {top.est_hours / other.est_hours:.1f}x slower than {name} but "
                f"cheaper per hour: {vs}")
    return f"{head}: cheaper per hour and at least as fast as {name}: {vs}"


def nearest_miss(arch: Architecture, workload: WorkloadSpec, spec: JobSpec) -> str:
    """What the job needs and the changes that would make it fit, tried for real."""
    allowed = [GPUS[g] for g in spec.resources.gpus]
    largest = max(allowed, key=lambda g: g.memory_gib)
    need = estimate_memory(arch, workload, 1).total_gib
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
        if not workload.gradient_checkpointing:
            variants.append(("gradient checkpointing",
                             workload.model_copy(update={"gradient_checkpointing": True})))
        for label, w in variants:
            for count in candidate_counts(arch, w, 8):
                if check_fit(largest, count, estimate_memory(arch, w, count)).fits:
                    ideas.append(label if count == 1 else f"{label} on {count} GPUs")
                    break
    else:
        for count in candidate_counts(arch, workload, 8):
            if count > max_gpus and check_fit(
                largest, count, estimate_memory(arch, workload, count)
            ).fits:
                ideas.append(f"allow {count} GPUs (resources.max_gpus_per_node: {count})")
                break
        if workload.weight_precision in ("bf16", "fp16", "fp32"):
            w = workload.model_copy(update={"precision": "int4"})
            if check_fit(largest, 1, estimate_memory(arch, w, 1)).fits:
                ideas.append("4-bit weights (workload.precision: int4)")
    if largest.name != max(GPUS.values(), key=lambda g: g.memory_gib).name:
        ideas.append("allow larger GPUs (resources.gpus)")
    return head + (": " + ", ".join(ideas) if ideas else ": no change tried makes it fit")

