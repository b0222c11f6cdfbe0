"""Why a GPU model has no placement: checked on its best offer (the lowest expected cost
over its counts that fit): no offer, memory, then every limit it misses (budget, hourly
cap, deadline), then avoided places."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from gpuopt.jobs.estimate.fit import usable_gib
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.hazard import preemptions_per_hour
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.configurations import (
    Configuration,
    ModelSearch,
    deadline_slowdown,
    hours_left,
)
from gpuopt.policies.plan.costing import lost_hours_per_preemption
from gpuopt.policies.plan.model import PlacementContext
from gpuopt.policies.plan.reasons import money, money_up
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

NO_OFFER = "no offer in the allowed clouds/regions"
AVOIDED = "avoided after repeated preemptions"


@dataclass(frozen=True, slots=True)
class Where:
    """Where the job may run: its markets, owned capacity and offer filter."""

    markets: tuple[Market, ...]
    owned: Sequence[Offer]
    allowed: Callable[[Offer], bool]


@dataclass(frozen=True, slots=True)
class BestOffer:
    """A model's cheapest placement, ignoring the limits."""

    cost: Decimal
    offer: Offer
    config: Configuration
    lost: float  # hours a preemption loses

    @property
    def shape(self) -> str:
        shape = f"{self.offer.gpu} x{self.config.fit.count}"
        return shape if self.config.nodes == 1 else f"{self.config.nodes} nodes of {shape}"


def not_sold(name: str, spec: JobSpec, index: OfferIndex, where: Where) -> str:
    max_gpus = spec.resources.max_gpus_per_node
    bigger = sorted({c for c in index.counts(name) if c > max_gpus and any(
        where.allowed(o) for m in where.markets for o in index.sorted_offers(name, c, m))})
    if bigger:
        return (f"sold only as x{'/'.join(map(str, bigger))} in the allowed clouds/regions: "
                f"allow resources.max_gpus_per_node: {bigger[0]}")
    return NO_OFFER


def does_not_fit(name: str, found: ModelSearch, spec: JobSpec) -> str:
    worst = found.too_small
    if worst is None:  # no sold count is a multiple of the job's model parallelism
        w = spec.workload
        return (f"sold as x{'/'.join(map(str, found.sold))}: none a multiple of "
                f"tensor x pipeline x context parallel ({w.model_parallel} GPUs)")
    on = (f"{found.too_small_nodes} nodes of {worst.count}" if found.too_small_nodes > 1
          else str(worst.count))
    return (f"does not fit: needs {worst.per_gpu_gib:.1f} GiB per GPU on {on} "
            f"(largest sold), {usable_gib(GPUS[name], spec.workload, worst.count):.1f} GiB "
            "usable")


def cheapest_in_list(cfg: Configuration, offers: Sequence[Offer], where: Where,
                     ctx: PlacementContext, lost: float) -> tuple[BestOffer | None, bool]:
    """The first allowed, not avoided offer of a price-sorted list, costed; and whether
    an avoided one came before it."""
    avoided = False
    for offer in offers:
        if not where.allowed(offer) or not cfg.takes(offer):
            continue
        if offer.place in ctx.avoid:
            avoided = True
            continue
        expected = cfg.hours
        if offer.market is Market.SPOT:
            hazard, _ = preemptions_per_hour(
                offer, ctx.observed_preemptions, ctx.default_preemptions)
            expected += hazard * cfg.nodes * cfg.hours * lost
        cost = offer.price_per_hour * cfg.nodes * Decimal(repr(expected))
        return BestOffer(cost, offer, cfg, lost), avoided
    return None, avoided


def best_offer(name: str, found: ModelSearch, spec: JobSpec, index: OfferIndex,
               ctx: PlacementContext, where: Where) -> tuple[BestOffer | None, bool]:
    """The model's cheapest placement over its fitting configurations and markets; and
    whether an avoided place was passed over."""
    best: BestOffer | None = None
    avoided = False
    for cfg in found.configs:
        lost = lost_hours_per_preemption(spec, cfg.hours, ctx.restart_overhead_hours)
        pool = [o for o in where.owned if o.gpu == name and o.gpu_count == cfg.fit.count
                and cfg.nodes == 1]
        for market in where.markets:
            listed = index.sorted_offers(name, cfg.fit.count, market)
            offers = (*pool, *listed) if market is Market.ON_DEMAND else listed
            found_here, passed = cheapest_in_list(cfg, offers, where, ctx, lost)
            avoided = avoided or passed
            if found_here is not None and (best is None or found_here.cost < best.cost):
                best = found_here
    return best, avoided


def limit_missed(best: BestOffer, spec: JobSpec, ctx: PlacementContext,
                 budget: Decimal | None) -> str | None:
    """Every limit the best placement misses, in the order budget, hourly cap, deadline
    (all of them: raising the budget of a GPU that also misses the deadline would not
    place it, so the user is told both)."""
    cfg, offer = best.config, best.offer
    where = f"{best.shape} {offer.market.value} {offer.cloud}"
    price = offer.price_per_hour * cfg.nodes
    cap = spec.resources.max_price_per_hour
    missed: list[str] = []
    if budget is not None and best.cost > budget:
        missed.append(f"over the budget: {money_up(best.cost)} at best ({where}), "
                      f"{money(budget)} left")
    if cap is not None and price > cap:
        missed.append(f"over the hourly cap: ${price}/h at best ({where}), cap ${cap}/h")
    late = deadline_missed(best, spec, ctx)
    if late is not None:
        missed.append(late)
    return "; and ".join(missed) if missed else None


def deadline_missed(best: BestOffer, spec: JobSpec, ctx: PlacementContext) -> str | None:
    left = hours_left(ctx)
    if left is None:
        return None
    hours = best.config.hours
    slow = deadline_slowdown(spec.workload, ctx)
    if hours * slow > left:
        return (f"cannot meet the deadline even on-demand: needs {hours:.1f} h "
                f"(p90 {hours * slow:.1f} h) on {best.shape}, "
                f"{max(left, 0.0):.1f} h left")
    if best.offer.market is Market.SPOT and (
            hours * slow + best.lost + ctx.restart_overhead_hours > left):
        return "spot: no slack for a preemption before the deadline"
    return None


def binding_constraint(name: str, found: ModelSearch, spec: JobSpec, index: OfferIndex,
                       ctx: PlacementContext, where: Where, budget: Decimal | None) -> str:
    """Why GPU model ``name`` has no placement (see the module's docstring)."""
    if not found.sold:
        return not_sold(name, spec, index, where)
    if not found.configs:
        return does_not_fit(name, found, spec)
    best, avoided = best_offer(name, found, spec, index, ctx, where)
    if best is None:
        return AVOIDED if avoided else NO_OFFER
    missed = limit_missed(best, spec, ctx, budget)
    if missed is not None:
        return missed
    return AVOIDED if avoided else "no placement within the limits"
