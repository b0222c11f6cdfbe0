"""The regions an executor can launch in narrow the plan (PlacementContext.regions_by_cloud):
found when SkyPilot's optimizer refused the multi-node example's pick, AWS eu-south-2 (an
opt-in region missing from the account's zone mapping), with "Invalid region"."""

from __future__ import annotations

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import plan_job
from gpuopt.providers.offer import Market
from tests.policies.test_placement import ctx, offer, spec

JOB = spec("resources:\n  gpus: [H100]\n  max_gpus_per_node: 8\n",
           workload="  type: finetune\n  method: lora\n  tokens: 100m\n")


def test_a_region_the_executor_cannot_launch_in_is_never_picked() -> None:
    offers = [offer("H100", 1, "1.00", Market.SPOT, region="eu-south-2", zone="eus2-az2"),
              offer("H100", 1, "1.50", Market.SPOT, region="us-east-1", zone="use1-az1"),
              offer("H100", 1, "1.20", cloud="gcp", region="us-central1")]
    index = OfferIndex.build(offers)
    anywhere = plan_job(JOB, index, ctx())
    assert anywhere.best is not None and anywhere.best.offer.region == "eu-south-2"
    narrowed = plan_job(JOB, index, ctx(regions_by_cloud={"aws": frozenset({"us-east-1"})}))
    assert narrowed.best is not None
    assert narrowed.best.offer.region == "us-central1"  # gcp is not narrowed
    assert {c.offer.region for c in narrowed.candidates} == {"us-central1", "us-east-1"}


def test_no_launchable_region_left_says_so() -> None:
    offers = [offer("H100", 1, "1.00", Market.SPOT, region="eu-south-2", zone="eus2-az2")]
    plan = plan_job(JOB, OfferIndex.build(offers),
                    ctx(regions_by_cloud={"aws": frozenset({"us-east-1"})}))
    assert plan.best is None
    assert [e.reason for e in plan.excluded] == ["no offer in the allowed clouds/regions"]
