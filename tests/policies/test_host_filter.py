"""resources.min_host_reliability / verified_hosts_only: marketplace hosts (Vast.ai) whose
offer carries a reliability score or a verification flag are filtered; others pass."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuopt.jobs.errors import SpecError
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import host_acceptable, plan_job
from tests.policies.test_placement import ctx, offer, spec

QLORA = ("  type: finetune\n  method: qlora\n  tokens: 20m\n  batch_size: 4\n  seq_len: 1024\n"
         "  gradient_checkpointing: true\n")


def test_host_acceptable() -> None:
    shaky = replace(offer("RTX4090", 1, "0.30", cloud="vast", region="Texas, US"),
                    reliability=0.90, verified=False)
    solid = replace(shaky, reliability=0.995, verified=True)
    own = offer("RTX4090", 1, "0.74", cloud="runpod", region="global")
    assert host_acceptable(shaky, None, False)
    assert not host_acceptable(shaky, 0.98, False) and host_acceptable(solid, 0.98, False)
    assert not host_acceptable(shaky, None, True) and host_acceptable(solid, None, True)
    assert host_acceptable(own, 0.99, True)  # no score: not a marketplace host


def test_the_plan_leaves_out_unreliable_and_unverified_hosts() -> None:
    cheap = replace(offer("RTX4090", 1, "0.30", cloud="vast", region="Texas, US",
                          itype="1x-RTX_4090-32-64304"), reliability=0.90, verified=False)
    good = replace(offer("RTX4090", 1, "0.40", cloud="vast", region="Germany, DE",
                         itype="1x-RTX_4090-32-65536"), reliability=0.997, verified=True)
    idx = OfferIndex.build([cheap, good])
    base = "resources:\n  gpus: [RTX4090]\n  max_gpus_per_node: 1\n"
    assert plan_job(spec(base, workload=QLORA), idx, ctx()).best.offer.region == "Texas, US"
    for extra in ("  min_host_reliability: 0.99\n", "  verified_hosts_only: true\n"):
        best = plan_job(spec(base + extra, workload=QLORA), idx, ctx()).best
        assert best is not None and best.offer.region == "Germany, DE"


def test_reliability_is_a_fraction() -> None:
    with pytest.raises(SpecError, match="min_host_reliability"):
        spec("resources:\n  min_host_reliability: 99\n", workload=QLORA)
