"""Placements over several nodes: costed together, their spot hazard N x one node's,
only on instance types with an inter-node fabric, and the hint when max_nodes binds."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.hazard import advisor_hazard
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.node_hint import more_nodes_hint
from gpuopt.policies.placement import PlacementContext, plan_job
from gpuopt.providers.fabrics import fabric_for
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FULL_70B = ("name: t\nmodel:\n  name: llama-3-70b\nworkload:\n  type: finetune\n"
            "  method: full\n  zero_stage: 3\n  gradient_checkpointing: true\n"
            "  batch_size: 1\n  seq_len: 4096\n  tokens: 100m\n")


def spec(resources: str) -> JobSpec:
    return parse_job_spec(FULL_70B + "resources:\n" + resources, "job.yaml")


def offer(itype: str, price: str, market: Market = Market.ON_DEMAND, *, cloud: str = "aws",
          gpu: str = "H100", bucket: int | None = None, zone: str | None = None) -> Offer:
    return Offer(cloud=cloud, region="r1", zone=zone, instance_type=itype, gpu=gpu,
                 gpu_count=8, gpu_memory_gib=GPUS[gpu].memory_gib, vcpus=192.0,
                 ram_gib=2048.0, market=market, price_per_hour=Decimal(price),
                 observed_at=NOW, source=f"api:{cloud}", interruption_bucket=bucket)


OFFERS = [
    offer("p5.48xlarge", "60"),  # EFA 3200 Gbps
    offer("a3-highgpu-8g", "55", cloud="gcp"),  # GPUDirect-TCPX 800 Gbps
    offer("8x-H100_SXM-32-65536", "20", cloud="vast"),  # no fabric: one node only
]


def test_a_70b_full_fine_tune_plans_on_several_nodes_with_the_fabric_named() -> None:
    plan = plan_job(spec("  gpus: [H100]\n  max_nodes: 4\n"), OfferIndex.build(OFFERS),
                    PlacementContext(now=NOW))
    assert plan.candidates
    for c in plan.candidates:
        assert c.nodes >= 3 and c.offer.gpu_count == 8  # 1.1 TB of state: 24+ GPUs
        assert c.fabric == fabric_for(c.offer.cloud, c.offer.instance_type)
        assert c.offer.cloud != "vast"
        # the nodes are bought together
        assert c.price_per_hour == c.offer.price_per_hour * c.nodes
        assert c.expected_cost == (c.price_per_hour * Decimal(repr(c.expected_hours))
                                   ).quantize(Decimal("0.000001"))
    best = plan.best
    assert best is not None and best.fabric is not None
    assert best.fabric.label in best.reason and f"{best.nodes} nodes of H100 x8" in best.reason
    assert best.to_json()["nodes"] == best.nodes
    assert best.to_json()["fabric"] == best.fabric.label


def test_the_faster_fabric_is_faster_on_the_same_nodes() -> None:
    plan = plan_job(spec("  gpus: [H100]\n  max_nodes: 3\n"), OfferIndex.build(OFFERS),
                    PlacementContext(now=NOW))
    hours = {c.offer.cloud: c.est_hours for c in plan.candidates if c.nodes == 3}
    assert hours["aws"] < hours["gcp"]  # EFA 3200 Gbps vs GPUDirect-TCPX 800 Gbps


def test_one_node_by_default_and_the_hint_names_the_nodes_that_would_fit() -> None:
    s = spec("  gpus: [H100]\n")
    index, ctx = OfferIndex.build(OFFERS), PlacementContext(now=NOW)
    plan = plan_job(s, index, ctx)
    assert plan.best is None and plan.nearest_miss
    hint = more_nodes_hint(s, index, ctx, plan)
    assert hint is not None
    assert hint.startswith("3 nodes of 8xH100 (")
    assert hint.endswith("would be the only fit: set resources.max_nodes: 3")


def test_the_hint_says_when_more_nodes_would_be_cheaper() -> None:
    # 13B with batch 4 needs 45 GiB per GPU on 8: one node of H100 (dear here), or two
    # p4d nodes of A100-40GB (31 GiB per GPU on 16) joined by EFA
    text = ("name: t\nmodel:\n  name: llama-2-13b\nworkload:\n  type: finetune\n"
            "  method: full\n  zero_stage: 3\n  gradient_checkpointing: true\n"
            "  batch_size: 4\n  seq_len: 4096\n  tokens: 100m\nresources:\n"
            "  max_gpus_per_node: 8\n")
    offers = [offer("8x-H100_SXM-32-65536", "400", cloud="vast"),
              offer("p4d.24xlarge", "10", gpu="A100-40GB")]
    s = parse_job_spec(text, "job.yaml")
    index, ctx = OfferIndex.build(offers), PlacementContext(now=NOW)
    plan = plan_job(s, index, ctx)
    assert plan.best is not None and plan.best.nodes == 1
    hint = more_nodes_hint(s, index, ctx, plan)
    assert hint is not None
    assert hint.startswith("2 nodes of 8xA100-40GB (aws over EFA 400 Gbps) would be cheaper")
    assert hint.endswith("set resources.max_nodes: 2")
    two = parse_job_spec(text + "  max_nodes: 2\n", "job.yaml")
    wider = plan_job(two, index, ctx)
    assert wider.best is not None and wider.best.nodes == 2
    assert wider.best.expected_cost < plan.best.expected_cost
    assert more_nodes_hint(two, index, ctx, wider) is None


@pytest.mark.parametrize("nodes", [3, 4])
def test_spot_hazard_of_n_nodes_is_n_times_one_node(nodes: int) -> None:
    offers = [offer("p5.48xlarge", "20", Market.SPOT, bucket=2, zone="r1a")]
    plan = plan_job(spec(f"  gpus: [H100]\n  max_nodes: {nodes}\n  spot: always\n"),
                    OfferIndex.build(offers), PlacementContext(now=NOW, top=10))
    on_n = next(c for c in plan.candidates if c.nodes == nodes)
    assert on_n.expected_preemptions == pytest.approx(
        nodes * advisor_hazard(2) * on_n.est_hours)


def test_max_nodes_is_validated_with_the_line() -> None:
    from gpuopt.jobs.errors import SpecError

    with pytest.raises(SpecError, match=r"job.yaml:\d+ resources.max_nodes"):
        spec("  max_nodes: 0\n")
    with pytest.raises(SpecError, match=r"resources.max_nodes"):
        spec("  max_nodes: 65\n")


def test_the_deadline_policy_holds_the_nodes_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A governed multi-node job: the policy is asked once, over the places selling the
    plan's instance type with its fabric, each priced for all the nodes; the spot it
    picks is placed on the same number of nodes, costed for all of them."""
    from datetime import timedelta

    import gpuopt.policies.next_attempt as next_attempt
    from gpuopt.policies.next_attempt import (
        JobSoFar,
        Placed,
        SpotPolicyInputs,
        decide_next_attempt,
        plan_next_attempt,
    )

    offers = [
        offer("p5.48xlarge", "98"),
        offer("p5.48xlarge", "30", Market.SPOT, zone="r1a", bucket=1),
        offer("p5.48xlarge", "31", Market.SPOT, zone="r1b", bucket=1),
        offer("8x-H100_SXM-32-65536", "5", Market.SPOT, cloud="vast"),  # no fabric
    ]
    s = spec("  gpus: [H100]\n  max_nodes: 3\ndeadline: 200h\n"
             "checkpoint:\n  dir: /tmp/ckpt\n")
    index = OfferIndex.build(offers)
    job = JobSoFar(submitted_at=NOW, deadline_at=NOW + timedelta(hours=200),
                   budget_micros=None, spent_micros=0)
    planned = plan_next_attempt(s, index, PlacementContext(now=NOW), job)
    assert not isinstance(planned, next_attempt.NoPlace)
    sp = planned.plan.best_in(Market.SPOT)
    assert sp is not None and sp.nodes == 3
    assert [(loc.where.place.zone, loc.price_per_hour) for loc in planned.locations] == [
        ("r1a", Decimal("90")), ("r1b", Decimal("93"))]
    asked: list[Decimal] = []
    real = next_attempt.decide

    def decide(live: object, locations: object, od: Decimal, history: object,
               policy: str, probe_s: float | None = None,
               tries_left: int | None = None) -> object:
        asked.append(od)
        got = real(live, locations, od, history, policy, probe_s=probe_s,  # type: ignore[arg-type]
                   tries_left=tries_left)
        from dataclasses import replace

        from gpuopt.policies.spot.model import spot
        return replace(got, hold=spot(1), keep=False, target=locations[1])  # type: ignore[index]

    monkeypatch.setattr(next_attempt, "decide", decide)
    got = decide_next_attempt(s, index, planned, job, SpotPolicyInputs(
        policy="auto", tick_s=30.0, restart_overhead_s=360.0, observations={}))
    assert asked == [Decimal("294")]  # the on-demand price of all three nodes
    assert isinstance(got, Placed) and got.candidate.nodes == 3
    assert got.candidate.offer.zone == "r1b" and got.on_demand_price == Decimal("294")
    assert got.candidate.expected_cost == Decimal("93") * Decimal(
        repr(sp.expected_hours))
