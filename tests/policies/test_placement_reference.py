"""The pruned placement search against a brute-force reference on generated inputs.

The reference costs every offer of every sold configuration that fits, with no bound and
no early stop, applies the limits, sorts by the ranking key and takes the Pareto set by
brute force. The planner must return exactly its head (top N) and exactly its frontier.
A placement is an offer on a number of nodes: every offer on 1 node, and an offer of an
instance type with an inter-node fabric also on 2..max_nodes nodes (the nodes' price
together, their hazard together).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpuopt.core.money import MICRO_USD
from gpuopt.jobs.estimate.runtime import EstimateCache, best_layout
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.hazard import preemptions_per_hour
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import (
    PlacementContext,
    _lost_hours_per_preemption,
    plan_job,
)
from gpuopt.policies.plan.configurations import deadline_slowdown
from gpuopt.providers.fabrics import FABRICS, fabric_for
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
MODELS = ("A10G", "L4", "A100-40GB", "A100-80GB", "H100")
WORKLOADS = (
    "  type: finetune\n  method: lora\n  tokens: 40m\n",
    "  type: finetune\n  method: qlora\n  tokens: 80m\n",
    "  type: finetune\n  method: full\n  zero_stage: 3\n  gradient_checkpointing: true\n"
    "  tokens: 30m\n",
    "  type: inference\n  requests: 20000\n  prompt_tokens: 512\n  output_tokens: 256\n",
)

# (offer key, nodes), expected cost, expected hours
Row = tuple[tuple[tuple[str, ...], int], Decimal, float]


def reference(spec: JobSpec, offers: list[Offer], ctx: PlacementContext) -> tuple[
        list[Row], set[tuple[str, ...]]]:
    """Every candidate within the limits, ranked; and the keys of their Pareto set."""
    arch, w = spec.resolved_model(), spec.workload
    res = spec.resources
    budget = spec.budget
    hours_left = ((ctx.deadline_at - ctx.now) / timedelta(hours=1)
                  if ctx.deadline_at is not None else None)
    markets = {"never": (Market.ON_DEMAND,), "always": (Market.SPOT,),
               "auto": (Market.ON_DEMAND, Market.SPOT)}[res.spot]
    cache = EstimateCache()
    slow = deadline_slowdown(w, ctx)
    rows: list[tuple[Row, tuple[object, ...]]] = []
    placements = [(o, n) for o in offers
                  for n in range(1, res.max_nodes + 1 if fabric_for(o.cloud, o.instance_type)
                                 else 2)]
    for o, nodes in placements:
        if (o.gpu not in res.gpus or o.cloud not in res.clouds or o.market not in markets
                or o.gpu_count > res.max_gpus_per_node
                or (res.regions and o.region not in res.regions)):
            continue
        best = best_layout(arch, w, GPUS[o.gpu], o.gpu_count, cache, nodes,
                           fabric_for(o.cloud, o.instance_type))
        if best is None:
            continue
        hours = best[2].hours
        # the deadline is met at the estimate's p90, as the planner checks it
        if hours_left is not None and hours * slow > hours_left:
            continue
        lost = _lost_hours_per_preemption(spec, hours, ctx.restart_overhead_hours)
        expected = hours
        if o.market is Market.SPOT:
            if (hours_left is not None
                    and hours * slow + lost + ctx.restart_overhead_hours > hours_left):
                continue
            hazard, _ = preemptions_per_hour(o, ctx.observed_preemptions,
                                             ctx.default_preemptions)
            expected = hours + nodes * hazard * hours * lost
        price = o.price_per_hour * nodes
        if res.max_price_per_hour is not None and price > res.max_price_per_hour:
            continue
        cost = (price * Decimal(repr(expected))).quantize(MICRO_USD, rounding=ROUND_HALF_EVEN)
        if budget is not None and cost > budget:
            continue
        tail = (price, o.key, nodes)
        key = ((expected, cost, *tail) if ctx.minimize == "time"
               else (cost, hours, *tail))
        rows.append((((o.key, nodes), cost, expected), key))
    rows.sort(key=lambda r: r[1])
    ranked = [r for r, _ in rows]
    pareto = {k for k, c, h in ranked
              if not any(c2 <= c and h2 <= h and (c2 < c or h2 < h) for _, c2, h2 in ranked)}
    return ranked, pareto


@st.composite
def offers_st(draw: st.DrawFn) -> list[Offer]:
    n = draw(st.integers(1, 60))
    cents = draw(st.lists(st.integers(5_000, 4_000_000), min_size=n, max_size=n, unique=True))
    out = []
    keys = set()
    for i, c in enumerate(cents):
        gpu = draw(st.sampled_from(MODELS))
        count = draw(st.sampled_from((1, 2, 4, 8)))
        market = draw(st.sampled_from((Market.ON_DEMAND, Market.SPOT)))
        cloud = draw(st.sampled_from(("aws", "gcp", "azure")))
        region = draw(st.sampled_from(("r1", "r2", "r3")))
        instance_type = f"{gpu}-{count}-{i}"
        if draw(st.booleans()):  # an instance type with a fabric: multi-node placements
            instance_type = draw(st.sampled_from(sorted(t for c, t in FABRICS if c == cloud)))
        offer = Offer(
            cloud=cloud, region=region,
            zone=f"{region}-{i}" if market is Market.SPOT else None,
            instance_type=instance_type, gpu=gpu, gpu_count=count,
            gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=8.0 * count, ram_gib=64.0 * count,
            market=market, price_per_hour=Decimal(c) / 10_000, observed_at=NOW,
            source=f"api:{cloud}",
            interruption_bucket=draw(st.sampled_from((None, 0, 1, 2, 4))),
        )
        if offer.key not in keys:  # one offer per place and instance type
            keys.add(offer.key)
            out.append(offer)
    return out


@st.composite
def job_st(draw: st.DrawFn) -> tuple[JobSpec, PlacementContext]:
    lines = []
    if draw(st.booleans()):
        lines.append(f"budget: {draw(st.integers(20, 3000))}")
    res = [f"  max_gpus_per_node: {draw(st.sampled_from((1, 2, 4, 8)))}",
           f"  max_nodes: {draw(st.sampled_from((1, 2, 3)))}"]
    if draw(st.booleans()):
        res.append(f"  max_price_per_hour: {draw(st.integers(2, 60))}")
    if draw(st.booleans()):
        res.append(f"  clouds: [{', '.join(draw(st.sets(st.sampled_from(('aws', 'gcp', 'azure')), min_size=1)))}]")  # noqa: E501
    if draw(st.booleans()):
        res.append(f"  regions: [{', '.join(draw(st.sets(st.sampled_from(('r1', 'r2', 'r3')), min_size=1)))}]")  # noqa: E501
    res.append(f"  spot: {draw(st.sampled_from(('auto', 'never', 'always')))}")
    if draw(st.booleans()):
        lines.append(f"checkpoint:\n  dir: s3://b/ckpt\n  interval: {draw(st.integers(5, 90))}m")
    text = (f"name: t\nmodel:\n  name: {draw(st.sampled_from(('llama-2-7b', 'mistral-7b')))}\n"
            f"workload:\n{draw(st.sampled_from(WORKLOADS))}"
            "resources:\n" + "\n".join(res) + "\n" + "".join(f"{x}\n" for x in lines))
    spec = parse_job_spec(text, "job.yaml")
    deadline = draw(st.none() | st.integers(2, 300))
    ctx = PlacementContext(
        now=NOW, deadline_at=NOW + timedelta(hours=deadline) if deadline else None,
        top=draw(st.sampled_from((1, 3, 20))),
        minimize=draw(st.sampled_from(("cost", "time"))),
    )
    return spec, ctx


@settings(max_examples=150, deadline=None)
@given(offers=offers_st(), job=job_st())
def test_pruned_search_equals_the_brute_force_reference(
        offers: list[Offer], job: tuple[JobSpec, PlacementContext]) -> None:
    spec, ctx = job
    ranked, pareto = reference(spec, offers, ctx)
    # ties in (cost, hours) make "the" Pareto row a choice; the prices are unique, so
    # a tie needs two identical configurations at equal hazard: left out
    assume(len({(c, h) for _, c, h in ranked}) == len(ranked))
    plan = plan_job(spec, OfferIndex.build(offers), ctx)
    got = [((c.offer.key, c.nodes), c.expected_cost, c.expected_hours)
           for c in plan.candidates]
    assert got == ranked[:ctx.top]
    assert {(c.offer.key, c.nodes) for c in plan.frontier} == pareto
    by_cost = sorted((r for r in ranked if r[0] in pareto), key=lambda r: (r[1], r[2]))
    assert [(c.offer.key, c.nodes) for c in plan.frontier] == [k for k, _, _ in by_cost]
    for c in plan.candidates:  # a multi-node placement names its fabric
        assert (c.fabric is not None) == (c.nodes > 1)
        if c.nodes > 1:
            assert c.fabric == fabric_for(c.offer.cloud, c.offer.instance_type)
