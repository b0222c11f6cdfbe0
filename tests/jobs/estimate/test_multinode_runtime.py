"""The runtime model over several nodes: the fabric between them is a term of the
data-parallel / ZeRO-3 communication, next to the GPUs' own link inside each node."""

from __future__ import annotations

import pytest

from gpuopt.jobs.estimate.fit import TRAINING_FIT_FRACTION
from gpuopt.jobs.estimate.runtime import (
    EstimateCache,
    best_layout,
    comm_seconds,
    scaling_efficiency,
    training_runtime,
)
from gpuopt.jobs.loader import parse_job_spec
from gpuopt.jobs.spec import JobSpec
from gpuopt.providers.fabrics import Fabric, fabric_for
from gpuopt.providers.hardware import GPUS

EFA_P5 = fabric_for("aws", "p5.48xlarge")
TCPX = fabric_for("gcp", "a3-highgpu-8g")


def _spec(workload: str, model: str = "llama-3-70b") -> JobSpec:
    return parse_job_spec(f"name: t\nmodel:\n  name: {model}\nworkload:\n{workload}",
                          "job.yaml")


ZERO3 = ("  type: finetune\n  method: full\n  zero_stage: 3\n  tokens: 100m\n"
         "  batch_size: 1\n  seq_len: 4096\n  gradient_checkpointing: true\n")


def test_the_published_figures_are_what_the_model_reads() -> None:
    assert EFA_P5 is not None and TCPX is not None
    assert (EFA_P5.name, EFA_P5.gbps) == ("EFA", 3200)
    assert (TCPX.name, TCPX.gbps) == ("GPUDirect-TCPX", 800)
    assert fabric_for("aws", "g5.48xlarge") is None  # plain Ethernet: one node only
    assert fabric_for("vast", "8x-H100_SXM-32-65536") is None


def test_one_node_is_the_intra_node_formula_and_more_nodes_add_the_fabric_term() -> None:
    s = _spec(ZERO3)
    arch, w, h100 = s.resolved_model(), s.workload, GPUS["H100"]
    assert EFA_P5 is not None
    one = comm_seconds(arch, w, h100, 8)
    # ZeRO-3: reduce-scatter the 16-bit gradients, all-gather the 16-bit weights twice,
    # through one direction of the NVLink (the table's 900 GB/s is both directions')
    payload = 2.0 * arch.params + 4.0 * arch.params
    assert one == pytest.approx(7 / 8 * payload / (h100.link_gbps / 2 * 1e9 * 0.8))
    two = comm_seconds(arch, w, h100, 16, 2, EFA_P5)
    assert two == pytest.approx(one + 1 / 2 * payload / (3200e9 / 8 * 0.8))
    with pytest.raises(ValueError, match="fabric"):
        comm_seconds(arch, w, h100, 16, 2, None)


def test_a_slower_fabric_scales_worse_and_takes_longer() -> None:
    s = _spec(ZERO3)
    arch, w, h100 = s.resolved_model(), s.workload, GPUS["H100"]
    assert EFA_P5 is not None and TCPX is not None
    slow = Fabric("Ethernet", 100, "test")
    effs = [scaling_efficiency(arch, w, h100, 16, 0.4, nodes=2, fabric=f)
            for f in (EFA_P5, TCPX, slow)]
    assert effs[0] > effs[1] > effs[2]
    assert scaling_efficiency(arch, w, h100, 8, 0.4) > effs[0]  # NVLink beats any fabric
    hours = [training_runtime(arch, w, h100, 16, nodes=2, fabric=f).hours
             for f in (EFA_P5, TCPX)]
    assert hours[0] < hours[1]


def test_a_70b_full_fine_tune_fits_only_when_sharded_over_several_nodes() -> None:
    s = _spec(ZERO3)
    arch, w, h100 = s.resolved_model(), s.workload, GPUS["H100"]
    cache = EstimateCache()
    # ~1.1 TB of state: 8 x 80 GB is not enough, nor is 16; 24 (3 nodes) is
    assert best_layout(arch, w, h100, 8, cache) is None
    assert best_layout(arch, w, h100, 8, cache, nodes=2, fabric=EFA_P5) is None
    found = best_layout(arch, w, h100, 8, cache, nodes=3, fabric=EFA_P5)
    assert found is not None
    layout, fit, rt = found
    assert (layout.shard, fit.count, layout.name) == (24, 8, "ZeRO-3")
    assert fit.per_gpu_gib < TRAINING_FIT_FRACTION * h100.memory_gib < 2 * fit.per_gpu_gib
    assert rt.scaling < 1.0


def test_inference_runs_the_node_layout_as_replicas_on_every_node() -> None:
    s = _spec("  type: inference\n  requests: 20000\n  prompt_tokens: 512\n"
              "  output_tokens: 256\n", model="llama-2-7b")
    arch, w, a100 = s.resolved_model(), s.workload, GPUS["A100-80GB"]
    one = best_layout(arch, w, a100, 8)
    two = best_layout(arch, w, a100, 8, nodes=2, fabric=None)
    assert one is not None and two is not None
    assert two[0].replicas == 2 * one[0].replicas and two[0].shard == one[0].shard
    assert two[2].hours < one[2].hours
